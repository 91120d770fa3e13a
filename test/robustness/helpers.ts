import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../lib/protocol/messages';
import { forkTracked } from '../helpers/resources';
import type { ServerReady } from './fuzz-server';

// ---- a seeded generator ---------------------------------------------------------------------------

/** A deterministic generator (mulberry32): the same seed gives the same cases, so every failure reproduces. */
export class Rng {
  private state: number;

  constructor(readonly seed: number) {
    this.state = seed | 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.state ^ (this.state >>> 15), 1 | this.state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }

  bytes(n: number): Buffer {
    const out = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

/** The seed a suite runs with: fixed, or ROBUSTNESS_SEED to explore others (printed in every failure). */
export function suiteSeed(fixed: number): number {
  const env = process.env.ROBUSTNESS_SEED;
  return env === undefined || env === '' ? fixed : Number(env) | 0;
}

/** A short printable view of bytes sent, for failure messages. */
export function preview(bytes: Buffer, max = 300): string {
  const text = JSON.stringify(bytes.subarray(0, max).toString('latin1'));
  return bytes.length > max ? `${text}... (${bytes.length} bytes)` : text;
}

// ---- the server in a child process ----------------------------------------------------------------

const threadCount = Number(process.env.TSTRITON_HTTP_THREAD_COUNT ?? '');
/**
 * Front-end threads of the fuzz servers in this run: `npm test` runs the suite a second time with
 * TSTRITON_HTTP_THREAD_COUNT=2, which the server process inherits, so that the fuzzers also reach the decoding on
 * front-end threads and the hand-off to the core. 0 when the variable asks for no more than one (the default).
 */
export const FRONT_END_THREADS = Number.isInteger(threadCount) && threadCount > 1 ? threadCount : 0;

/** A suite's title, naming the thread count in the threaded run, so that a failure says which run it came from. */
export function suiteTitle(title: string): string {
  return FRONT_END_THREADS > 0 ? `${title} (${FRONT_END_THREADS} front-end threads)` : title;
}

/** A fuzz server running in a child process. */
export interface ChildServer extends ServerReady {
  readonly pid: number;
  readonly process: ChildProcess;
  /** Why the process ended, once it has: its exit code or signal. */
  exited(): string | undefined;
  /** Ends the process and waits for it to exit. */
  kill(): Promise<void>;
  /**
   * After a failed case: gives a dying process a moment to exit, so the failure can say it crashed, then ends it
   * so that the next test starts a fresh one. Resolves with why it ended, or 'killed' when it was still up.
   */
  endAfterFailure(): Promise<string>;
}

/** Starts test/robustness/fuzz-server.ts in a child process with `config` (a TritonConfig) and waits until it serves. */
export async function startServer(config: Record<string, unknown> = {}): Promise<ChildServer> {
  // Tracked: the file's hooks kill it even if the test that started it never got to.
  const proc = forkTracked(join(__dirname, 'fuzz-server.ts'), [JSON.stringify(config)], {
    execArgv: ['--require', join(__dirname, '../../lib/instances/worker/register-ts.js')],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let exit: string | undefined;
  const exited = once(proc, 'exit').then(([code, signal]) => {
    exit = signal ? `signal ${String(signal)}` : `exit code ${String(code)}`;
  });
  const [ready] = (await Promise.race([once(proc, 'message'), exited.then(() => Promise.reject(new Error(`the server process ended before serving: ${exit}`)))])) as [
    ServerReady,
  ];
  const kill = async (): Promise<void> => {
    if (exit === undefined) {
      proc.kill('SIGKILL');
      await exited;
    }
  };
  // The threaded run proves nothing if the server quietly serves on its core thread (a platform without reusePort).
  const threads = FRONT_END_THREADS > 0 ? frontEndThreadsOf(proc.pid as number) : 0;
  if (threads < FRONT_END_THREADS) {
    await kill();
    throw new Error(`the fuzz server was asked for ${FRONT_END_THREADS} front-end threads (TSTRITON_HTTP_THREAD_COUNT) and runs ${threads}`);
  }
  return {
    ...ready,
    pid: proc.pid as number,
    process: proc,
    exited: () => exit,
    kill,
    async endAfterFailure() {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 1000)))]);
      clearTimeout(timer);
      const why = exit ?? 'killed';
      await kill();
      return why;
    },
  };
}

/** How many front-end threads a process runs: its threads that the server named `tstriton-fe-<n>`. */
function frontEndThreadsOf(pid: number): number {
  let count = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').startsWith('tstriton-fe-')) count++;
    } catch {
      // The thread ended meanwhile.
    }
  }
  return count;
}

/** Peak resident memory of a process in bytes (VmHWM), which only grows until reset. */
export function peakRss(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

/**
 * Lowers a process's VmHWM to its current resident size (`clear_refs` 5), so that the peak read next is the
 * request's, not the start-up's. Where the kernel refuses, the peak stays the start-up's and growth reads low by
 * the difference: still far below an unbounded inflate.
 */
export function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // See above: the measurement stays valid, only less tight.
  }
}

// ---- HTTP over a raw socket -----------------------------------------------------------------------

/** An HTTP request written by hand: whatever the method, path and headers, even ones http.request refuses. */
export interface RawRequest {
  readonly method?: string;
  readonly path: string;
  /** Header lines as sent (name, value); Host and Connection: close are added, Content-Length unless given. */
  readonly headers?: readonly (readonly [string, string])[];
  readonly body?: Buffer;
}

/** The bytes of a request: one per connection (`Connection: close`), so no case can leak into the next. */
export function requestBytes({ method = 'POST', path, headers = [], body = Buffer.alloc(0) }: RawRequest): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close'];
  if (!headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name))) lines.push(`Content-Length: ${body.length}`);
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), body]);
}

/** An HTTP response read off a raw socket. */
export interface RawResponse {
  readonly status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
}

/** How long a case may go unanswered before it counts as a hang (a failure, never a timing measurement). */
const HANG_MS = 20_000;

/**
 * Sends `bytes` on a new connection and reads the response. With `halfClose`, the client ends its side after
 * sending (for requests whose framing promises more than is sent). Resolves with undefined when the server
 * closed the connection without answering; rejects when it neither answers nor closes (a hang).
 */
export function rawHttp(port: number, bytes: Buffer, { halfClose = false } = {}): Promise<RawResponse | undefined> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    // The answer to HEAD has headers only, whatever its Content-Length says.
    const head = bytes.toString('latin1', 0, 5) === 'HEAD ';
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (value: RawResponse | undefined, err?: Error): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(undefined, new Error(`no answer and no close within ${HANG_MS} ms`)), HANG_MS);
    socket.on('connect', () => {
      socket.write(bytes);
      if (halfClose) socket.end();
    });
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const parsed = parseResponse(Buffer.concat(chunks), false, head);
      if (parsed) finish(parsed);
    });
    // A reset after the answer (the server closing with unread request bytes) is not a failure.
    socket.on('error', () => finish(parseResponse(Buffer.concat(chunks), true, head)));
    socket.on('close', () => finish(parseResponse(Buffer.concat(chunks), true, head)));
  });
}

/**
 * Parses a complete response, or returns undefined while it is incomplete (or, once `ended`, when there is none).
 * `head`: the request was HEAD, so the response has no body.
 */
function parseResponse(data: Buffer, ended: boolean, head: boolean): RawResponse | undefined {
  let start = 0;
  // Interim responses (100 Continue) come before the final one.
  for (;;) {
    const headEnd = data.indexOf('\r\n\r\n', start);
    if (headEnd < 0) return undefined;
    const [statusLine = '', ...lines] = data.toString('latin1', start, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
    if (!Number.isInteger(status)) return undefined;
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    if (status >= 100 && status < 200) {
      start = headEnd + 4;
      continue;
    }
    const rest = data.subarray(headEnd + 4);
    if (head) return { status, headers, body: Buffer.alloc(0) };
    const length = headers['content-length'];
    if (length !== undefined) {
      const n = Number(length);
      return rest.length >= n ? { status, headers, body: rest.subarray(0, n) } : undefined;
    }
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
      const body = dechunk(rest);
      return body ? { status, headers, body } : undefined;
    }
    return ended ? { status, headers, body: rest } : undefined;
  }
}

function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', pos);
    if (lineEnd < 0) return undefined;
    const size = parseInt(data.toString('latin1', pos, lineEnd), 16);
    if (!Number.isFinite(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (lineEnd + 2 + size + 2 > data.length) return undefined;
    parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
    pos = lineEnd + 2 + size + 2;
  }
}

/**
 * Whether a status is one a client mistake may get: 4xx, or 501 (Triton's answer for what it does not
 * implement, such as an unknown Content-Encoding). Never 500 (a fault) nor 502-504.
 */
export function isClientErrorStatus(status: number): boolean {
  return (status >= 400 && status < 500) || status === 501;
}

/** The `error` of Triton's error body `{"error": "..."}`, or undefined when the body is not one. */
export function errorOf(res: RawResponse): string | undefined {
  try {
    const json = JSON.parse(res.body.toString('utf8')) as unknown;
    if (typeof json === 'object' && json !== null && typeof (json as { error?: unknown }).error === 'string') return (json as { error: string }).error;
  } catch {
    // Not JSON: undefined below.
  }
  return undefined;
}

// ---- valid requests, to check that the server still serves correctly -------------------------------

interface JsonOutput {
  name: string;
  datatype: string;
  shape: number[];
  data: unknown[];
}

/** Valid infer requests over HTTP to the three fuzz models; throws unless each answers 200 with the right values. */
export async function expectHttpServes(port: number, rng: Rng): Promise<void> {
  const a = Array.from({ length: 4 }, () => rng.int(2000) - 1000);
  const b = Array.from({ length: 4 }, () => rng.int(2000) - 1000);
  const addSub = await postJson(port, 'add_sub', {
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [1, 4], data: a },
      { name: 'INPUT1', datatype: 'FP32', shape: [1, 4], data: b },
    ],
  });
  const byName = new Map(addSub.outputs.map((o) => [o.name, o.data]));
  expectEqual('add_sub OUTPUT0', byName.get('OUTPUT0'), a.map((v, i) => v + (b[i] as number)));
  expectEqual('add_sub OUTPUT1', byName.get('OUTPUT1'), a.map((v, i) => v - (b[i] as number)));

  const words = ['h\u00e9llo', '', `w${rng.int(1e6)}\u65e5`];
  const bytes = await postJson(port, 'identity_bytes', { inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 3], data: words }] });
  expectEqual('identity_bytes OUTPUT0', bytes.outputs[0]?.data, words);

  // Beyond 2^53: only an exact INT64 path doubles it right.
  const x = 2n ** 61n + BigInt(rng.int(1e6));
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/double_int64/infer`, {
    method: 'POST',
    body: `{"inputs":[{"name":"INPUT0","datatype":"INT64","shape":[1,2],"data":[${x},-3]}]}`,
  });
  const text = await res.text();
  if (res.status !== 200 || !text.includes(`"data":[${2n * x},-6]`)) throw new Error(`double_int64 answered ${res.status} ${text}`);
}

async function postJson(port: number, model: string, body: unknown): Promise<{ outputs: JsonOutput[] }> {
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${model} answered ${res.status} ${text}`);
  return JSON.parse(text) as { outputs: JsonOutput[] };
}

function expectEqual(what: string, got: unknown, expected: unknown): void {
  if (JSON.stringify(got) !== JSON.stringify(expected)) throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(got)}`);
}

// ---- gRPC ----------------------------------------------------------------------------------------

/** ModelInfer with proto-loader's codecs, as the project's client encodes it. */
export const INFER_METHOD = loadProtos('number').inference.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
export const INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';

/** The status of a ModelInfer call whose message is `bytes` exactly (a passthrough serializer), and its answer. */
export function rawModelInfer(client: grpc.Client, bytes: Buffer): Promise<{ code: number; details: string; response?: Buffer }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest<Buffer, Buffer>(
      INFER_PATH,
      (b) => b,
      (b) => b,
      bytes,
      (err, response) => {
        if (err) resolve({ code: err.code, details: err.details });
        else resolve({ code: grpc.status.OK, details: '', response });
      },
    );
  });
}

/** A valid ModelInfer to each fuzz model over gRPC; throws unless each answers OK with the right values. */
export async function expectGrpcServes(client: grpc.Client, rng: Rng): Promise<void> {
  const a = Float32Array.from({ length: 4 }, () => rng.int(2000) - 1000);
  const b = Float32Array.from({ length: 4 }, () => rng.int(2000) - 1000);
  const addSub = await modelInfer(client, {
    model_name: 'add_sub',
    id: `check-${rng.int(1e9)}`,
    inputs: [
      { name: 'INPUT0', datatype: 'FP32', shape: [1, 4] },
      { name: 'INPUT1', datatype: 'FP32', shape: [1, 4] },
    ],
    raw_input_contents: [Buffer.from(a.buffer), Buffer.from(b.buffer)],
  });
  const outputs = new Map(addSub.outputs.map((o, i) => [o.name, addSub.raw_output_contents[i] as Uint8Array]));
  expectEqual('add_sub OUTPUT0', [...asFloats(outputs.get('OUTPUT0'))], [...a.map((v, i) => v + (b[i] as number))]);
  expectEqual('add_sub OUTPUT1', [...asFloats(outputs.get('OUTPUT1'))], [...a.map((v, i) => v - (b[i] as number))]);

  const x = 2n ** 61n + BigInt(rng.int(1e6));
  const doubled = await modelInfer(client, {
    model_name: 'double_int64',
    inputs: [{ name: 'INPUT0', datatype: 'INT64', shape: [1, 2] }],
    raw_input_contents: [Buffer.from(BigInt64Array.of(x, -3n).buffer)],
  });
  const raw = Buffer.from(doubled.raw_output_contents[0] as Uint8Array);
  expectEqual('double_int64 OUTPUT0', [raw.readBigInt64LE(0).toString(), raw.readBigInt64LE(8).toString()], [(2n * x).toString(), '-6']);

  const word = Buffer.from(`w${rng.int(1e6)}\u00e9\u0000`);
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32LE(word.length);
  const bytes = await modelInfer(client, {
    model_name: 'identity_bytes',
    inputs: [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 1] }],
    raw_input_contents: [Buffer.concat([prefix, word])],
  });
  expectEqual('identity_bytes OUTPUT0', [...(bytes.raw_output_contents[0] as Uint8Array)], [...prefix, ...word]);
}

function asFloats(bytes: Uint8Array | undefined): Float32Array {
  if (!bytes) return new Float32Array(0);
  const copy = Buffer.from(bytes);
  return new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4);
}

function modelInfer(client: grpc.Client, request: ModelInferRequestMessage): Promise<ModelInferResponseMessage> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(INFER_PATH, INFER_METHOD.requestSerialize, INFER_METHOD.responseDeserialize, request, (err, res) => {
      if (err) reject(new Error(`${request.model_name} failed: ${err.code} ${err.details}`));
      else resolve(res as ModelInferResponseMessage);
    });
  });
}
