import {
  Rng,
  errorOf,
  expectHttpServes,
  isClientErrorStatus,
  preview,
  rawHttp,
  requestBytes,
  startServer,
  type ChildServer,
  type RawRequest,
  type RawResponse,
} from './helpers';
import { fromValue, type JsonNode } from './json-mutator';

// What the HTTP fuzz suites share: the models, valid requests to mutate, and the runner that sends cases one per
// connection to a server in a child process and checks each answer.

/** A valid request to every model after this many cases, and after the last. */
const CHECK_EVERY = 100;

export const MODELS = ['add_sub', 'identity_bytes', 'double_int64'] as const;
export type ModelName = (typeof MODELS)[number];

/** One request to send, and what it is for failure messages. */
export interface HttpCase {
  readonly label: string;
  readonly request: RawRequest;
}

// ---- valid requests, the seeds of every mutation -----------------------------------------------------

function validInputs(model: ModelName, r: Rng): unknown[] {
  switch (model) {
    case 'add_sub':
      return ['INPUT0', 'INPUT1'].map((name) => ({ name, datatype: 'FP32', shape: [1, 4], data: Array.from({ length: 4 }, () => r.int(100) - 50) }));
    case 'identity_bytes':
      return [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 2], data: ['a\u00e9', `${r.int(1000)}`] }];
    default:
      return [{ name: 'INPUT0', datatype: 'INT64', shape: [1, 2], data: [2n ** 60n + BigInt(r.int(1000)), -1] }];
  }
}

export function validJson(model: ModelName, r: Rng): JsonNode {
  const body: Record<string, unknown> = { inputs: validInputs(model, r) };
  if (r.chance(0.3)) body.id = `req-${r.int(1000)}`;
  if (r.chance(0.3)) body.parameters = { priority: 1, timeout: 10_000_000, tag: 'x' };
  if (r.chance(0.4)) {
    const out = model === 'add_sub' ? ['OUTPUT0', 'OUTPUT1'] : ['OUTPUT0'];
    body.outputs = out.map((name) => ({ name, parameters: r.chance(0.5) ? { binary_data: r.chance(0.5) } : { classification: 1 } }));
  }
  return fromValue(body);
}

export function inferPath(model: string, r: Rng): string {
  return r.chance(0.2) ? `/v2/models/${model}/versions/1/infer` : `/v2/models/${model}/infer`;
}

/** The binary wire form of the model's inputs, and the JSON header that declares them. */
export function validBinary(model: ModelName, r: Rng): { header: JsonNode; blobs: Buffer[] } {
  const blobs: Buffer[] = [];
  let inputs: unknown[];
  if (model === 'add_sub') {
    inputs = ['INPUT0', 'INPUT1'].map((name) => {
      blobs.push(Buffer.from(Float32Array.from({ length: 4 }, () => r.int(100)).buffer));
      return { name, datatype: 'FP32', shape: [1, 4], parameters: { binary_data_size: 16 } };
    });
  } else if (model === 'identity_bytes') {
    const words = [Buffer.from('x\u00e9'), Buffer.alloc(0), r.bytes(r.int(8))];
    blobs.push(Buffer.concat(words.flatMap((w) => [lengthPrefix(w.length), w])));
    inputs = [{ name: 'INPUT0', datatype: 'BYTES', shape: [1, 3], parameters: { binary_data_size: blobs[0]?.length } }];
  } else {
    blobs.push(Buffer.from(BigInt64Array.of(BigInt(r.int(1e6)), -5n).buffer));
    inputs = [{ name: 'INPUT0', datatype: 'INT64', shape: [1, 2], parameters: { binary_data_size: 16 } }];
  }
  const body: Record<string, unknown> = { inputs };
  if (r.chance(0.5)) body.outputs = [{ name: 'OUTPUT0', parameters: { binary_data: true } }];
  return { header: fromValue(body), blobs };
}

export function lengthPrefix(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

/** `body` in chunked transfer coding, in random chunk sizes. */
export function chunked(body: Buffer, r: Rng): Buffer {
  const parts: Buffer[] = [];
  for (let pos = 0; pos < body.length; ) {
    const n = Math.min(body.length - pos, 1 + r.int(64));
    parts.push(Buffer.from(`${n.toString(16)}\r\n`), body.subarray(pos, pos + n), Buffer.from('\r\n'));
    pos += n;
  }
  parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

// ---- checks ---------------------------------------------------------------------------------------

/**
 * What every well-framed request must get: an answer; 200, or a client-error status with Triton's JSON error
 * body. Returns the problem, or undefined.
 */
export function problemWith(res: RawResponse | undefined): string | undefined {
  if (!res) return 'the server closed the connection without answering';
  if (res.status === 200) return undefined;
  if (!isClientErrorStatus(res.status)) return `status ${res.status} for a client mistake: ${res.body.toString('utf8').slice(0, 300)}`;
  if (errorOf(res) === undefined) return `status ${res.status} without a JSON {"error": ...} body: ${preview(res.body)}`;
  return undefined;
}

/** How a runner checks each answer, and whether it half-closes after sending. */
export interface RunOptions {
  readonly halfClose?: boolean;
  /** The problem with an answer, or undefined; `problemWith` unless given. */
  readonly check?: (res: RawResponse | undefined) => string | undefined;
}

let server: ChildServer | undefined;

/** The fuzz server, started again when a previous test ended it. */
export async function liveServer(): Promise<ChildServer> {
  if (!server || server.exited() !== undefined) server = await startServer();
  return server;
}

/** Ends the fuzz server (afterAll). */
export async function stopServer(): Promise<void> {
  await server?.kill();
  server = undefined;
}

/**
 * Sends `cases` one by one, each on its own connection, and a valid request to every model after each
 * CHECK_EVERY cases and after the last; fails at the first case that crashes the server or gets a wrong answer.
 */
export async function runCases(cases: Iterable<HttpCase>, seed: number, options: RunOptions = {}): Promise<number> {
  const check = options.check ?? problemWith;
  const verify = new Rng(seed ^ 0x5eed);
  let i = 0;
  for (const c of cases) {
    const s = await liveServer();
    const bytes = requestBytes(c.request);
    const where = () => `seed ${seed}, case ${i} (${c.label}); sent ${preview(bytes)}`;
    let res: RawResponse | undefined;
    let problem: string | undefined;
    try {
      res = await rawHttp(s.http, bytes, { halfClose: options.halfClose });
      problem = s.exited() === undefined ? check(res) : 'the server process ended';
    } catch (err) {
      problem = (err as Error).message;
    }
    if (problem) throw new Error(`${where()}: ${problem} (server process: ${await s.endAfterFailure()})`);
    if (++i % CHECK_EVERY === 0) await expectServes(s, verify, where);
  }
  const s = await liveServer();
  await expectServes(s, verify, () => `seed ${seed}, after all ${i} cases`);
  return i;
}

async function expectServes(s: ChildServer, r: Rng, where: () => string): Promise<void> {
  try {
    await expectHttpServes(s.http, r);
  } catch (err) {
    throw new Error(`${where()}: a valid request failed afterwards: ${(err as Error).message} (server process: ${await s.endAfterFailure()})`, { cause: err });
  }
}

export function* generate(seed: number, count: number, next: (r: Rng) => HttpCase): Generator<HttpCase> {
  const r = new Rng(seed);
  for (let i = 0; i < count; i++) yield next(r);
}

