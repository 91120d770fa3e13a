/**
 * Our server in a benchmark child, as a user would run it: a `Triton` on 127.0.0.1 (a free port) with one
 * transport, no metrics and silent logs, and the models `bind` adds. It serves its port on the main thread
 * (`httpThreadCount: 1`, set explicitly: the default, 0, would pick a thread count by the machine's cores) unless
 * the caller asks for N ≥ 2 front-end threads, which it then checks are running.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Triton } from 'tstriton';
import { FRONT_END_THREAD_PREFIX } from '../cores/thread-cpu';
import { runChild } from './child';

const LABEL = { http: 'HTTP', grpc: 'gRPC' } as const;

/** How runTritonChild sets the server up beyond its models. */
export interface TritonChildOptions {
  /** `httpThreadCount`: 1 (the default here) serves the port on the main thread; N ≥ 2 on N front-end threads. */
  httpThreadCount?: number;
}

/** This process's threads named as front-end threads (Linux /proc; none elsewhere). */
function frontEndThreads(): number {
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return 0;
  }
  let n = 0;
  for (const tid of tids) {
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').startsWith(FRONT_END_THREAD_PREFIX)) n++;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return n;
}

/** Runs our server over `transport` with the models `bind` adds, until the parent stops it. */
export function runTritonChild(transport: 'http' | 'grpc', bind: (triton: Triton) => void, options: TritonChildOptions = {}): void {
  runChild(async () => {
    const httpThreadCount = options.httpThreadCount ?? 1;
    if (!(Number.isInteger(httpThreadCount) && httpThreadCount >= 1)) throw new Error(`expected httpThreadCount N ≥ 1, got ${httpThreadCount}`);
    const triton = new Triton(
      transport === 'http'
        ? { httpThreadCount, httpPort: 0, allowGrpc: false, allowMetrics: false, logLevel: 'silent', httpAddress: '127.0.0.1' }
        : { httpThreadCount, grpcPort: 0, allowHttp: false, allowMetrics: false, logLevel: 'silent', grpcAddress: '127.0.0.1' },
    );
    bind(triton);
    await triton.run();
    const port = triton.ports[transport];
    if (port === undefined) throw new Error(`the ${LABEL[transport]} transport did not start`);
    // A platform without reusePort serves the port on the main thread instead (logged, and the logs are silent):
    // that would measure something else.
    if (httpThreadCount > 1 && frontEndThreads() !== httpThreadCount) {
      const found = frontEndThreads();
      await triton.stop();
      throw new Error(`expected ${httpThreadCount} front-end threads (${FRONT_END_THREAD_PREFIX}<i>), found ${found}`);
    }
    return { port, stop: async () => void (await triton.stop()) };
  });
}
