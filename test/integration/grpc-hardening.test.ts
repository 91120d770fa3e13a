import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import * as http2 from 'node:http2';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import type { Triton, Request, Response, TritonConfigInit } from 'tstriton';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferRequestMessage, ModelInferResponseMessage, ModelStreamInferResponseMessage } from '../../lib/protocol/messages';
import { rejectionOf } from '../helpers/caught';
import { forkTracked } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const MiB = 1024 * 1024;
const INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';
const services = loadProtos('number').inference;
const inferDef = services.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
const streamDef = services.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;

/** Field 5 (`inputs`, length-delimited) claiming 2^32-1 bytes: not a ModelInferRequest at all. */
const GARBAGE = Buffer.from([0x2a, 0xff, 0xff, 0xff, 0xff, 0x0f]);

function fp32Request(model: string, id: string, values: Float32Array): ModelInferRequestMessage {
  return {
    model_name: model,
    id,
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length] }],
    raw_input_contents: [Buffer.from(values.buffer, values.byteOffset, values.byteLength)],
  };
}

/** One gRPC length-prefixed message: the compressed flag, the big-endian length, the bytes. */
function frame(message: Buffer, compressed: boolean): Buffer {
  const header = Buffer.alloc(5);
  header[0] = compressed ? 1 : 0;
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

/** The messages of a response body (none of them compressed: the server does not compress responses). */
function unframe(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let pos = 0; pos + 5 <= body.length; ) {
    const len = body.readUInt32BE(pos + 1);
    out.push(body.subarray(pos + 5, pos + 5 + len));
    pos += 5 + len;
  }
  return out;
}

interface RawAnswer {
  readonly status: number;
  readonly details: string;
  readonly messages: Buffer[];
}

/**
 * A call written by hand over node:http2, as any gRPC client puts it on the wire: `body` is the request's framed
 * messages, sent in one write and half-closed; with `gzipped`, the call says `grpc-encoding: gzip` (the messages
 * set their compressed flag themselves).
 */
function rawCall(session: http2.ClientHttp2Session, path: string, body: Buffer, gzipped: boolean): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...(gzipped ? { 'grpc-encoding': 'gzip' } : {}),
    });
    const chunks: Buffer[] = [];
    let status: number | undefined;
    let details = '';
    const take = (headers: http2.IncomingHttpHeaders): void => {
      if (headers['grpc-status'] === undefined) return;
      status = Number(headers['grpc-status']);
      details = decodeURIComponent(String(headers['grpc-message'] ?? ''));
    };
    req.on('response', take);
    req.on('trailers', take);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', reject);
    req.on('close', () => {
      if (status === undefined) reject(new Error(`the call closed without a grpc-status (RST_STREAM ${req.rstCode})`));
      else resolve({ status, details, messages: unframe(Buffer.concat(chunks)) });
    });
    req.end(body);
  });
}

/** Peak resident memory of a process in bytes (VmHWM), which only grows until reset. */
function peakRss(pid: number): number {
  const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  if (kb === undefined) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

/**
 * Lowers a process's VmHWM to its current resident size (`clear_refs` 5), so that the peak measured next is the
 * request's and not the start-up's (transpiling the sources peaks higher than the idle server). Where the kernel
 * refuses, the peak stays the start-up's: growth then reads low by their difference, still far below an
 * unbounded inflate.
 */
function resetPeakRss(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch {
    // See above: the measurement stays valid, only less tight.
  }
}

const rejection = (p: Promise<unknown>): Promise<grpc.ServiceError> => rejectionOf<grpc.ServiceError>(p);

// ---- a compressed message that inflates past the receive limit -----------------------------------

describe('gRPC hardening: a decompression bomb', () => {
  let child: ChildProcess | undefined;
  let session: http2.ClientHttp2Session | undefined;

  afterEach(async () => {
    session?.close();
    session = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill();
      await exited;
    }
    child = undefined;
  });

  /** Starts the fixture server in a child process (default config) and resolves with its port and limit. */
  async function startChild(): Promise<{ port: number; limit: number; pid: number }> {
    const proc = forkTracked(join(__dirname, '../fixtures/grpc/child-server.js'), [], {
      execArgv: ['--require', join(__dirname, '../../lib/instances/worker/register-ts.js')],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child = proc;
    const [ready] = (await Promise.race([once(proc, 'message'), once(proc, 'exit').then(([code]) => Promise.reject(new Error(`child server exited with ${code}`)))])) as [
      { port: number; grpcMaxMessageSize: number },
    ];
    return { port: ready.port, limit: ready.grpcMaxMessageSize, pid: proc.pid as number };
  }

  it('answers RESOURCE_EXHAUSTED for 1 MB of gzip that inflates to 1 GiB, without inflating it, and serves the next request', async () => {
    const { port, limit, pid } = await startChild();
    expect(limit).toBe(64 * MiB);
    // 1024 gzip members of 1 MiB of zeros each: about 1 MB on the wire, 1 GiB once inflated.
    const member = gzipSync(Buffer.alloc(MiB));
    const bomb = Buffer.concat(new Array<Buffer>(1024).fill(member));
    expect(bomb.length).toBeLessThan(2 * MiB);

    session = http2.connect(`http://127.0.0.1:${port}`);
    resetPeakRss(pid);
    const before = peakRss(pid);
    const answer = await rawCall(session, INFER_PATH, frame(bomb, true), true);
    const growth = peakRss(pid) - before;

    expect(answer.status).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(answer.details).toBe(`Received message that decompresses to a size larger than ${limit}`);
    expect(growth).toBeLessThanOrEqual(100 * MiB + limit);

    // The connection and the server are still fine: a valid compressed request on the same connection succeeds.
    const values = Float32Array.of(1, 2, 3, 4);
    const ok = await rawCall(session, INFER_PATH, frame(gzipSync(inferDef.requestSerialize(fp32Request('identity_fp32', 'after', values))), true), true);
    expect(ok.status).toBe(grpc.status.OK);
    const res = inferDef.responseDeserialize(ok.messages[0] as Buffer);
    expect(res.id).toBe('after');
    expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).equals(Buffer.from(values.buffer))).toBe(true);
  });
});

// ---- in-process servers ---------------------------------------------------------------------------

const BASE: TritonConfigInit = { allowGrpc: true, allowHttp: false };

let triton: Triton | undefined;
const clients: grpc.Client[] = [];

async function start(config: TritonConfigInit = {}): Promise<number> {
  triton = loopbackTriton({ ...BASE, ...config });
  triton.bind({
    modelName: 'identity_fp32',
    inferFunc: async (requests: Request[]) => requests.map((r) => ({ OUTPUT0: r.inputs.INPUT0 as Response[string] })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  // Answers the element count only, so that a large input does not come back as a large output.
  triton.bind({
    modelName: 'count_fp32',
    inferFunc: async (requests: Request[]) =>
      requests.map((r) => ({ COUNT: { dtype: 'INT64', shape: [1, 1], data: BigInt64Array.of(BigInt((r.inputs.INPUT0 as { data: Float32Array }).data.length)) } })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'COUNT', dtype: 'INT64', shape: [1] }],
    config: { maxBatchSize: 8, batcher: null },
  });
  await triton.run();
  return triton.ports.grpc as number;
}

function client(port: number, options: grpc.ChannelOptions = {}): grpc.Client {
  const c = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
    ...options,
  });
  clients.push(c);
  return c;
}

function unary<Req, Res>(c: grpc.Client, path: string, serialize: (r: Req) => Buffer, deserialize: (b: Buffer) => Res, request: Req): Promise<Res> {
  return new Promise((resolve, reject) => {
    c.makeUnaryRequest(path, serialize, deserialize, request, new grpc.Metadata(), { deadline: Date.now() + 30_000 }, (err, value) =>
      err ? reject(err) : resolve(value as Res),
    );
  });
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await triton?.stop();
  triton = undefined;
});

describe('gRPC hardening: the receive limit bounds the decompressed size', () => {
  // 17 Mi FP32 elements: 68 MiB once inflated, a few dozen KiB as gzip.
  const big = (): ModelInferRequestMessage => fp32Request('count_fp32', 'big', new Float32Array(17 * MiB));

  it.each(['gzip', 'deflate'] as const)('refuses a %s request that inflates past the default 64 MiB with RESOURCE_EXHAUSTED', async (algorithm) => {
    const port = await start();
    const gz = client(port, { 'grpc.default_compression_algorithm': grpc.compressionAlgorithms[algorithm] });
    const err = await rejection(unary(gz, inferDef.path, inferDef.requestSerialize, inferDef.responseDeserialize, big()));
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toBe(`Received message that decompresses to a size larger than ${64 * MiB}`);
  });

  it('accepts it when grpcMaxMessageSize is -1 (unlimited, set explicitly)', async () => {
    const port = await start({ grpcMaxMessageSize: -1 });
    const gz = client(port, { 'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip });
    const res = await unary(gz, inferDef.path, inferDef.requestSerialize, inferDef.responseDeserialize, big());
    expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).readBigInt64LE(0)).toBe(BigInt(17 * MiB));
  });
});

// ---- malformed messages ---------------------------------------------------------------------------

describe('gRPC hardening: a malformed message', () => {
  const bytes = (b: Buffer): Buffer => b;
  const good = (id: string, v: number): Buffer => inferDef.requestSerialize(fp32Request('identity_fp32', id, Float32Array.of(v)));

  it('fails a unary ModelInfer with INVALID_ARGUMENT naming the problem', async () => {
    const c = client(await start());
    const err = await rejection(unary(c, inferDef.path, bytes, bytes, GARBAGE));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toBe('malformed ModelInferRequest: truncated or invalid length-delimited field');
  });

  it('on ModelStreamInfer: every good request before it is answered, then the stream ends with INVALID_ARGUMENT (20 runs)', async () => {
    const port = await start();
    const session = http2.connect(`http://127.0.0.1:${port}`);
    try {
      for (let run = 0; run < 20; run++) {
        // Good, good, garbage in one write: the garbage arrives before either answer can have been written.
        const body = Buffer.concat([frame(good('a', 1), false), frame(good('b', 2), false), frame(GARBAGE, false)]);
        const answer = await rawCall(session, streamDef.path, body, false);
        const ids = answer.messages.map((b) => {
          const m = streamDef.responseDeserialize(b);
          return m.error_message ? `error: ${m.error_message}` : (m.infer_response?.id ?? '?');
        });
        expect({ run, ids: ids.sort(), status: answer.status, details: answer.details }).toEqual({
          run,
          ids: ['a', 'b'],
          status: grpc.status.INVALID_ARGUMENT,
          details: 'malformed ModelInferRequest: truncated or invalid length-delimited field',
        });
      }
    } finally {
      session.close();
    }
  });

  it('on ModelStreamInfer: the stream is not read past it, and a new stream on the same channel works', async () => {
    const c = client(await start());
    const call = c.makeBidiStreamRequest(streamDef.path, bytes, bytes, new grpc.Metadata(), { deadline: Date.now() + 20_000 });
    const ids: string[] = [];
    const ended = new Promise<grpc.ServiceError | undefined>((resolve) => {
      call.on('data', (b: Buffer) => ids.push(streamDef.responseDeserialize(b).infer_response?.id ?? '?'));
      call.on('error', (err: grpc.ServiceError) => resolve(err));
      call.on('end', () => resolve(undefined));
    });
    call.write(GARBAGE);
    call.write(good('after', 3));
    call.end();
    expect((await ended)?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(ids).toEqual([]);

    const res = await unary(c, inferDef.path, inferDef.requestSerialize, inferDef.responseDeserialize, fp32Request('identity_fp32', 'next', Float32Array.of(5)));
    expect(res.id).toBe('next');
  });
});

// ---- long error messages --------------------------------------------------------------------------

describe('gRPC hardening: a very long error message', () => {
  it('still reaches the client, cut to a length a trailer can carry', async () => {
    const c = client(await start());
    const name = 'x'.repeat(100_000);
    const err = await rejection(unary(c, inferDef.path, inferDef.requestSerialize, inferDef.responseDeserialize, fp32Request(name, 'long', Float32Array.of(1))));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^Request for unknown model: 'x{100,}\.\.\. \(\d+ more characters\)$/);
    expect(err.details.length).toBeLessThanOrEqual(8 * 1024 + 40);
  });
});
