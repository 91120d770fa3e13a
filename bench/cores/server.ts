/**
 * The server child of bench:cores: one `Triton` serving HTTP and gRPC on 127.0.0.1 (free ports, no metrics,
 * silent logs) on `httpThreadCount` front-end threads (argv[2], a `ServerConfig` as JSON; 1, the ports served on
 * the main thread, when absent) with
 * - `identity_fp32`: the in-process identity of examples/identity/model.ts, as bench:http and bench:grpc bind it
 *   (`@batch`, `maxBatchSize: 64`, `strict: true`), and
 * - `identity_fp32_worker`: the same callable in one worker instance (identity-worker.ts), same config.
 *
 * It names its threads before anything else (thread-names.ts). Calls from the parent: `grpcPort`; and
 * `profileStart` / `profileStop` (a CPU profile of the main thread through node:inspector, written to a file whose
 * path `profileStop` returns), taken only after the measured rounds, so the inspector costs them nothing.
 */
import { Session } from 'node:inspector/promises';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Triton, workers } from 'tstriton';
import { bindIdentity } from '../../examples/identity/model';
import { runChild } from '../harness/child';
import { FRONT_END_THREAD_PREFIX } from './thread-cpu';
import { nameStartupThreads } from './thread-names';

/** The worker-instance model's name. */
export const WORKER_MODEL = 'identity_fp32_worker';
/** Profile sampling interval, µs (V8's default is 1000). */
const SAMPLING_US = 250;

/** What the parent passes as argv[2] (JSON). */
export interface ServerConfig {
  /** `httpThreadCount`: 1 serves the ports on the main thread; N ≥ 2 on N front-end threads. */
  frontEndThreads: number;
}

/** This process's threads named as front-end threads (Linux /proc; none elsewhere). */
function frontEndThreads(): number {
  let n = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').startsWith(FRONT_END_THREAD_PREFIX)) n++;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return n;
}

/** What the parent may ask. */
export type ServerCall = { op: 'grpcPort' } | { op: 'profileStart' } | { op: 'profileStop'; label: string };

if (require.main === module) {
  runChild(async () => {
    await nameStartupThreads();
    const cfg = JSON.parse(process.argv[2] ?? '{"frontEndThreads":1}') as ServerConfig;
    if (!(Number.isInteger(cfg.frontEndThreads) && cfg.frontEndThreads >= 1)) throw new Error(`expected { frontEndThreads: N ≥ 1 }, got ${process.argv[2]}`);
    const triton = new Triton({
      // Set even for 1: the default (0) would pick a thread count by the machine's cores.
      httpThreadCount: cfg.frontEndThreads,
      httpPort: 0,
      grpcPort: 0,
      allowMetrics: false,
      logLevel: 'silent',
      httpAddress: '127.0.0.1',
      grpcAddress: '127.0.0.1',
    });
    bindIdentity(triton);
    triton.bind({
      modelName: WORKER_MODEL,
      inferFunc: workers({ module: path.join(__dirname, 'identity-worker.js'), devices: ['cpu'] }),
      inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 64 },
      strict: true,
    });
    await triton.run();
    const { http, grpc } = triton.ports;
    if (http === undefined || grpc === undefined) throw new Error(`expected HTTP and gRPC ports, got ${JSON.stringify(triton.ports)}`);
    // A platform without reusePort serves the ports on the main thread instead: that would measure something else.
    if (cfg.frontEndThreads > 1 && frontEndThreads() !== cfg.frontEndThreads) {
      await triton.stop();
      throw new Error(`expected ${cfg.frontEndThreads} front-end threads (${FRONT_END_THREAD_PREFIX}<i>), found ${frontEndThreads()}`);
    }

    let session: Session | undefined;
    const call = async (payload: unknown): Promise<unknown> => {
      const c = payload as ServerCall;
      if (c.op === 'grpcPort') return grpc;
      if (c.op === 'profileStart') {
        if (!session) {
          session = new Session();
          session.connect();
          await session.post('Profiler.enable');
          await session.post('Profiler.setSamplingInterval', { interval: SAMPLING_US });
        }
        await session.post('Profiler.start');
        return null;
      }
      if (c.op === 'profileStop' && session) {
        const { profile } = await session.post('Profiler.stop');
        const file = path.join(os.tmpdir(), `tstriton-bench-cores-${process.pid}-${c.label}.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        return file;
      }
      throw new Error(`unknown call ${JSON.stringify(payload)}`);
    };
    return {
      port: http,
      call,
      stop: async () => {
        session?.disconnect();
        await triton.stop();
      },
    };
  });
}
