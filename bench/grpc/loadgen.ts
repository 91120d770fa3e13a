/**
 * The gRPC load generator, run as its own process: a closed loop of `concurrency` outstanding ModelInfer
 * calls on one grpc-js channel (as tritonclient and perf_analyzer use one), each sending the same
 * pre-serialized request and taking the response bytes without decoding them, so that the client's cost
 * per call is grpc-js's alone. The first response is decoded and checked by the caller before the load.
 */
import * as grpc from '@grpc/grpc-js';
import { performance } from 'node:perf_hooks';

export interface LoadSpec {
  port: number;
  /** The serialized ModelInferRequest, base64. */
  request: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadResult {
  /** Calls completed inside the measurement window. */
  count: number;
  /** Failed calls (warm-up included). */
  errors: number;
  firstError?: string;
  elapsedMs: number;
  /** Latencies in microseconds, of the calls completed inside the window. */
  p50: number;
  p99: number;
  /** CPU the load generator itself used in the window, as a share of one core. */
  clientCpu: number;
}

export type LoadMessage = { type: 'run'; spec: LoadSpec } | { type: 'exit' };
export type LoadReply = { type: 'result'; result: LoadResult } | { type: 'failed'; message: string };

const PATH = '/inference.GRPCInferenceService/ModelInfer';
const passThrough = (b: Buffer): Buffer => b;

/** Runs one closed-loop load and resolves with what was measured. */
export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const request = Buffer.from(spec.request, 'base64');
  const client = new grpc.Client(`127.0.0.1:${spec.port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
  });
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let phase: 'warmup' | 'measure' | 'stopping' = 'warmup';
  let windowStart = 0;
  let windowEnd = 0;
  let cpuStart = process.cpuUsage();
  let outstanding = 0;

  return new Promise((resolve) => {
    const finish = (): void => {
      client.close();
      latencies.sort((a, b) => a - b);
      const pick = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
      const cpu = process.cpuUsage(cpuStart);
      const elapsedMs = windowEnd - windowStart;
      resolve({ count: latencies.length, errors, firstError, elapsedMs, p50: pick(0.5), p99: pick(0.99), clientCpu: (cpu.user + cpu.system) / 1000 / elapsedMs });
    };
    const send = (): void => {
      outstanding++;
      const t0 = performance.now();
      client.makeUnaryRequest(PATH, passThrough, passThrough, request, (err) => {
        outstanding--;
        if (err) {
          errors++;
          firstError ??= `${err.code} ${err.details}`;
        } else if (phase === 'measure') {
          latencies.push((performance.now() - t0) * 1000);
        }
        if (phase !== 'stopping') send();
        else if (outstanding === 0) finish();
      });
    };
    for (let i = 0; i < spec.concurrency; i++) send();
    setTimeout(() => {
      phase = 'measure';
      windowStart = performance.now();
      cpuStart = process.cpuUsage();
      setTimeout(() => {
        phase = 'stopping';
        windowEnd = performance.now();
      }, spec.durationMs);
    }, spec.warmupMs);
  });
}

process.on('message', (m: LoadMessage) => {
  if (m.type === 'exit') process.exit(0);
  runLoad(m.spec).then(
    (result) => process.send?.({ type: 'result', result } satisfies LoadReply),
    (err: unknown) => process.send?.({ type: 'failed', message: err instanceof Error ? err.message : String(err) } satisfies LoadReply),
  );
});
process.on('disconnect', () => process.exit(0));
