/**
 * The load generator process of every benchmark, and its handle in the parent. It runs the load driver
 * (load-driver.ts) over raw HTTP/1.1 sockets (http-transport.ts) or one grpc-js channel (grpc-transport.ts),
 * in a process of its own so that the client's CPU is not the server's.
 */
import type { ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { spawnNode } from './child-proc';
import { grpcTransport } from './grpc-transport';
import { httpTransport } from './http-transport';
import { drive, type LoadPlan, type LoadResult } from './load-driver';

/** One load: where to, what (pre-built bytes) and how. */
export interface LoadSpec extends LoadPlan {
  port: number;
  /** gRPC: the unary method to call (its path). Without it, the requests are raw HTTP/1.1 requests. */
  grpcMethod?: string;
  /** The request, base64: raw HTTP/1.1 request bytes, or a serialized gRPC message. */
  request: string;
  /**
   * More requests (base64): each lane then sends `request`, `alternates[0]`, ... in turn, and the latencies of
   * each are also reported apart (`byRequest`).
   */
  alternates?: string[];
}

type LoadMessage = { type: 'run'; spec: LoadSpec } | { type: 'exit' };
type LoadReply = { type: 'result'; result: LoadResult } | { type: 'failed'; message: string };

/** Runs one load in this process. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const requests = [spec.request, ...(spec.alternates ?? [])].map((r) => Buffer.from(r, 'base64'));
  const transport = spec.grpcMethod === undefined ? httpTransport(spec.port, requests) : grpcTransport(spec.port, spec.grpcMethod, requests);
  return drive(spec, transport);
}

/** The load generator process, seen from the benchmark. */
export class LoadGen {
  private constructor(private readonly proc: ChildProcess) {}

  /** Starts the process, pinned to `cpu` when given. */
  static start(cpu?: number): LoadGen {
    return new LoadGen(spawnNode(path.join(__dirname, 'loadgen.js'), { cpu }));
  }

  run(spec: LoadSpec): Promise<LoadResult> {
    return new Promise((resolve, reject) => {
      const onMessage = (m: LoadReply) => {
        this.proc.off('message', onMessage);
        if (m.type === 'result') resolve(m.result);
        else reject(new Error(`load generator: ${m.message}`));
      };
      this.proc.on('message', onMessage);
      this.proc.send({ type: 'run', spec } satisfies LoadMessage);
    });
  }

  exit(): void {
    this.proc.send({ type: 'exit' } satisfies LoadMessage);
  }
}

if (require.main === module) {
  process.on('message', (m: LoadMessage) => {
    if (m.type === 'exit') process.exit(0);
    runLoad(m.spec).then(
      (result) => process.send?.({ type: 'result', result } satisfies LoadReply),
      (err: unknown) => process.send?.({ type: 'failed', message: err instanceof Error ? err.message : String(err) } satisfies LoadReply),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
