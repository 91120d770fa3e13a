import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { type Triton, tensor, type Request, type Response, type Tensor, type TritonConfigInit } from 'tstriton';
import { ModelClient } from 'tstriton/client';
import { batch } from 'tstriton/decorators';
import { bindEchoChat } from '../../examples/chat/model';
import { bindSequenceAccumulate } from '../../examples/sequence/model';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferRequestMessage, ModelInferResponseMessage, ModelStreamInferResponseMessage } from '../../lib/protocol/messages';
import { SHM_DIR } from '../../lib/base/shm-dir';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// Front-end threads (httpThreadCount: 2) on a real server: requests on separate connections land on both threads
// (the kernel spreads the connections of a reusePort listener), and everything that is one per server —
// batching, statistics, sequences, model control, shared-memory registrations, the response cache — stays one,
// whatever thread a request came through.
//
// Which thread served a request is read from Linux itself: each front-end thread is named `tstriton-fe-<n>`,
// and /proc/self/task/<tid>/io counts the bytes each thread wrote (its responses included). `onBothThreads`
// checks that every front-end thread wrote responses while a step ran: a step of N requests on N fresh
// connections reaches both threads unless the kernel put all N on one (odds 2^-(N-1); the steps use 24 or more).

const THREADS = 2;
/** Requests a step sends, each on a connection of its own. */
const CONNECTIONS = 24;
/** Fewest bytes a thread writes to answer one request (a status line alone is 17): more than any idle chatter. */
const ONE_ANSWER = 64;

const CONFIG: TritonConfigInit = {
  allowGrpc: true,
  openaiPort: 0,
  httpThreadCount: THREADS,
  openai: true,
  allowSharedMemory: true,
  responseCacheByteSize: 1 << 20,
  modelControlMode: 'explicit',
  httpRestrictedApi: 'model-repository:admin-key=secret',
  exitTimeoutSeconds: 5,
};

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** The ids of the server's front-end threads, which the server names `tstriton-fe-<n>`. */
function frontEndThreads(): string[] {
  const tids: string[] = [];
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').startsWith('tstriton-f')) tids.push(tid);
    } catch {
      // The thread ended meanwhile.
    }
  }
  return tids;
}

/** Bytes thread `tid` has passed to write(2) and its kin, sockets included. */
function bytesWritten(tid: string): number {
  const line = readFileSync(`/proc/self/task/${tid}/io`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('wchar:'));
  return Number(line?.slice('wchar:'.length));
}

/** Runs `step`, then checks that each of the server's front-end threads wrote answers meanwhile. */
async function onBothThreads<T>(step: () => Promise<T>): Promise<T> {
  const tids = frontEndThreads();
  expect(tids).toHaveLength(THREADS);
  const before = tids.map(bytesWritten);
  const result = await step();
  const wrote = tids.map((tid, i) => bytesWritten(tid) - before[i]!);
  expect(wrote.map((n) => n >= ONE_ANSWER)).toEqual(tids.map(() => true));
  return result;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on a connection of its own (no agent, `Connection: close`). */
function once(port: number, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: { connection: 'close', ...(text === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }), ...headers },
      },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: data }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const json = <T>(answer: Answer): T => JSON.parse(answer.body) as T;

interface InferBody {
  id?: string;
  outputs?: { name: string; data?: number[]; parameters?: Record<string, unknown> }[];
  error?: string;
}

interface ModelStats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'fail' | 'cache_hit' | 'cache_miss', { count: number; ns: number }>;
  batch_stats: { batch_size: number; compute_infer: { count: number } }[];
}

const services = loadProtos('number');

/** A gRPC client on a connection of its own (grpc-js otherwise shares one connection between clients of one address). */
class GrpcConnection {
  private readonly client: grpc.Client;

  constructor(port: number) {
    this.client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  }

  unary<Res>(rpc: string, request: object): Promise<Res> {
    const def = services.inference[rpc] as grpc.MethodDefinition<object, Res>;
    return new Promise((resolve, reject) => this.client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, (err, value) => (err ? reject(err) : resolve(value as Res))));
  }

  /** Sends `requests` on one ModelStreamInfer call, ends its side, and collects every response. */
  stream(requests: ModelInferRequestMessage[]): Promise<ModelStreamInferResponseMessage[]> {
    const def = services.inference.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
    const call = this.client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize);
    const out: ModelStreamInferResponseMessage[] = [];
    const done = new Promise<ModelStreamInferResponseMessage[]>((resolve, reject) => {
      call.on('data', (m: ModelStreamInferResponseMessage) => out.push(m));
      call.on('error', reject);
      call.on('end', () => resolve(out));
    });
    for (const r of requests) call.write(r);
    call.end();
    return done;
  }

  close(): void {
    this.client.close();
  }
}

const fp32 = (values: number[]): Buffer => Buffer.from(Float32Array.from(values).buffer);
const fromFp32 = (raw: Uint8Array | undefined): number[] => (raw ? Array.from(new Float32Array(Uint8Array.from(raw).buffer)) : []);

/** The server-sent events of an answer: the `data:` of each. */
const events = (body: string): string[] =>
  body
    .split('\n\n')
    .filter((e) => e.trim() !== '')
    .map((e) => e.replace(/^data: /, ''));

describe(`a server on ${THREADS} front-end threads`, () => {
  let triton: Triton;
  let port: number;
  /** Request ids of each execution of `gather`. */
  const gathered: string[][] = [];
  /** Request ids `cached` ran (the others came from the response cache). */
  const cachedRan: string[] = [];
  const shmFiles: string[] = [];

  const double = batch(async ({ x }: Record<string, Tensor>) => ({ y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v * 2)) }));
  const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };

  beforeAll(async () => {
    triton = track(loopbackTriton(CONFIG));
    triton.bind({ modelName: 'double', inferFunc: double, ...io, config: { maxBatchSize: 8 } });
    // Cuts a batch only once 32 requests wait (or after 30 s): one execution of 32 shows one queue for all threads.
    triton.bind({
      modelName: 'gather',
      inferFunc: async (requests: Request[]): Promise<Response[]> => {
        gathered.push(requests.map((r) => r.id));
        return requests.map((r) => ({ y: tensor('FP32', r.inputs.x!.shape, (r.inputs.x!.data as Float32Array).map((v) => v * 2)) }));
      },
      ...io,
      config: { maxBatchSize: 32, batcher: { preferredBatchSize: [32], maxQueueDelayMicroseconds: 30_000_000 } },
    });
    triton.bind({ modelName: 'tally', inferFunc: double, ...io, config: { maxBatchSize: 8 } });
    triton.bind({ modelName: 'ctl', inferFunc: double, ...io, config: { maxBatchSize: 8 } });
    triton.bind({
      modelName: 'cached',
      inferFunc: async (requests: Request[]): Promise<Response[]> =>
        requests.map((r) => {
          cachedRan.push(r.id);
          return { y: tensor('FP32', r.inputs.x!.shape, (r.inputs.x!.data as Float32Array).map((v) => v * 2)) };
        }),
      ...io,
      config: { maxBatchSize: 8, responseCache: true },
    });
    bindSequenceAccumulate(triton);
    bindEchoChat(triton);
    // Answer with their prompts: one template a string (applied on the front-end thread), one a function (in the core).
    const promptEcho = async (requests: Request[]): Promise<Response[]> =>
      requests.map((r) => ({ text_output: tensor('BYTES', [1], [`<${Buffer.from((r.inputs.text_input!.data as Uint8Array[])[0]!).toString()}>`]) }));
    const text = { inputs: [{ name: 'text_input', dtype: 'BYTES' as const, shape: [1] }], outputs: [{ name: 'text_output', dtype: 'BYTES' as const, shape: [1] }] };
    triton.bind({ modelName: 'template_text', inferFunc: promptEcho, ...text, config: { batching: false }, chatTemplate: '[{role}] {content};' });
    triton.bind({
      modelName: 'template_function',
      inferFunc: promptEcho,
      ...text,
      config: { batching: false },
      chatTemplate: (messages) => messages.map((m) => `${m.role.toUpperCase()}=${m.content}`).join('|'),
    });
    await triton.run();
    port = triton.ports.http as number;
  }, 120_000);

  afterAll(async () => {
    await triton?.stop();
    for (const f of shmFiles) rmSync(f, { force: true });
  }, 60_000);

  const inferBody = (values: number[], extra: Record<string, unknown> = {}) => ({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, values.length], data: values }], ...extra });
  const statsOf = async (model: string): Promise<ModelStats> => json<{ model_stats: ModelStats[] }>(await once(port, 'GET', `/v2/models/${model}/stats`)).model_stats[0]!;

  it(`runs ${THREADS} front-end threads, and requests on separate connections reach each of them`, async () => {
    expect(frontEndThreads()).toHaveLength(THREADS);
    const answers = await onBothThreads(() => Promise.all(range(CONNECTIONS).map((i) => once(port, 'POST', '/v2/models/double/infer', inferBody([i, 1])))));
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(json<InferBody>(a).outputs?.[0]?.data).toEqual([2 * i, 2]);
    });
  });

  it('batches requests from both threads together: 32 requests on 32 connections run as one execution', async () => {
    const answers = await onBothThreads(() => Promise.all(range(32).map((i) => once(port, 'POST', '/v2/models/gather/infer', inferBody([i], { id: `g${i}` })))));
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(json<InferBody>(a)).toMatchObject({ id: `g${i}`, outputs: [{ name: 'y', data: [2 * i] }] });
    });
    expect(gathered).toHaveLength(1);
    expect([...gathered[0]!].sort()).toEqual(range(32).map((i) => `g${i}`).sort());
    const stats = await statsOf('gather');
    expect(stats.inference_count).toBe(32);
    expect(stats.execution_count).toBe(1);
    expect(stats.batch_stats.map((b) => [b.batch_size, b.compute_infer.count])).toEqual([[32, 1]]);
  }, 90_000);

  it('keeps one statistics view: reads on every connection and over gRPC agree, and count every request of every connection', async () => {
    await onBothThreads(() => Promise.all(range(CONNECTIONS).map((i) => once(port, 'POST', '/v2/models/tally/infer', inferBody([i])))));
    const reads = await onBothThreads(() => Promise.all(range(CONNECTIONS).map(() => once(port, 'GET', '/v2/models/tally/stats'))));
    const views = reads.map((r) => json<{ model_stats: ModelStats[] }>(r).model_stats[0]!);
    for (const view of views) expect(view).toEqual(views[0]);
    expect(views[0]!.inference_count).toBe(CONNECTIONS);
    expect(views[0]!.inference_stats.success.count).toBe(CONNECTIONS);
    const overGrpc = range(4).map(() => new GrpcConnection(triton.ports.grpc as number));
    try {
      const grpcViews = await Promise.all(overGrpc.map((c) => c.unary<{ model_stats: { inference_count: number; inference_stats: { success: { count: number } } }[] }>('ModelStatistics', { name: 'tally' })));
      for (const v of grpcViews) {
        expect(Number(v.model_stats[0]!.inference_count)).toBe(CONNECTIONS);
        expect(Number(v.model_stats[0]!.inference_stats.success.count)).toBe(CONNECTIONS);
      }
    } finally {
      for (const c of overGrpc) c.close();
    }
  });

  it("keeps a sequence's state when its START, middle and END requests come on different connections", async () => {
    const values = range(CONNECTIONS).map((i) => i + 1);
    const sums = await onBothThreads(async () => {
      const out: number[] = [];
      for (let i = 0; i < values.length; i++) {
        const parameters = { sequence_id: 4242, sequence_start: i === 0, sequence_end: i === values.length - 1 };
        const answer = await once(port, 'POST', '/v2/models/sequence_accumulate/infer', { parameters, inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1], data: [values[i]] }] });
        expect([i, answer.status, json<InferBody>(answer).error]).toEqual([i, 200, undefined]);
        out.push(json<InferBody>(answer).outputs![0]!.data![0]!);
      }
      return out;
    });
    expect(sums).toEqual(values.map((_, i) => ((i + 1) * (i + 2)) / 2));
  });

  it('unloads a model through one connection: every other connection finds it unavailable; a load brings it back everywhere', async () => {
    const admin = { 'admin-key': 'secret' };
    // Both threads have served the model (and keep its shape) before the unload.
    await onBothThreads(() => Promise.all(range(CONNECTIONS).map(async () => expect((await once(port, 'POST', '/v2/models/ctl/infer', inferBody([1]))).status).toBe(200))));
    expect((await once(port, 'POST', '/v2/repository/models/ctl/unload', {}, admin)).status).toBe(200);
    await onBothThreads(() =>
      Promise.all(
        range(CONNECTIONS).map(async () => {
          expect((await once(port, 'GET', '/v2/models/ctl/ready')).status).toBe(400);
          const refused = await once(port, 'POST', '/v2/models/ctl/infer', inferBody([1]));
          expect(refused.status).toBe(404);
          expect(json<InferBody>(refused).error).toBe("Request for unknown model: 'ctl' has no available versions");
        }),
      ),
    );
    const index = json<{ name: string; state: string }[]>(await once(port, 'POST', '/v2/repository/index', {}, admin));
    expect(index.find((m) => m.name === 'ctl')?.state).toBe('UNAVAILABLE');
    expect((await once(port, 'POST', '/v2/repository/models/ctl/load', {}, admin)).status).toBe(200);
    await onBothThreads(() =>
      Promise.all(
        range(CONNECTIONS).map(async (i) => {
          expect((await once(port, 'GET', '/v2/models/ctl/ready')).status).toBe(200);
          const answer = await once(port, 'POST', '/v2/models/ctl/infer', inferBody([i]));
          expect(answer.status).toBe(200);
          expect(json<InferBody>(answer).outputs?.[0]?.data).toEqual([2 * i]);
        }),
      ),
    );
  });

  it('uses a shared-memory region registered on one connection from every other; unregistered on a third, it is gone for all', async () => {
    const object = (key: string, values: number[]): string => {
      const file = join(SHM_DIR, key);
      shmFiles.push(file);
      writeFileSync(file, fp32(values));
      return `/${key}`;
    };
    const keyA = object(`tstriton-fe-${process.pid}-a`, [1, 2, 3, 4]);
    const keyB = object(`tstriton-fe-${process.pid}-b`, [10, 20, 30, 40]);
    const outKey = object(`tstriton-fe-${process.pid}-out`, [0, 0, 0, 0]);
    const register = (region: string, key: string) => once(port, 'POST', `/v2/systemsharedmemory/region/${region}/register`, { key, offset: 0, byte_size: 16 });
    const fromShm = (out?: boolean) =>
      once(port, 'POST', '/v2/models/double/infer', {
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'in', shared_memory_byte_size: 16 } }],
        ...(out && { outputs: [{ name: 'y', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 16 } }] }),
      });

    expect((await register('in', keyA)).status).toBe(200);
    expect((await register('out', outKey)).status).toBe(200);
    const status = json<{ name: string; key: string }[]>(await once(port, 'GET', '/v2/systemsharedmemory/status'));
    expect(status.map((r) => [r.name, r.key]).sort()).toEqual([
      ['in', keyA],
      ['out', outKey],
    ]);
    // Read (and written) on both threads.
    await onBothThreads(() =>
      Promise.all(
        range(CONNECTIONS).map(async () => {
          const answer = await fromShm();
          expect([answer.status, json<InferBody>(answer).outputs?.[0]?.data]).toEqual([200, [2, 4, 6, 8]]);
        }),
      ),
    );
    const toShm = await fromShm(true);
    expect(toShm.status).toBe(200);
    // Written to the region, so answered without data.
    expect(json<InferBody>(toShm).outputs).toEqual([{ name: 'y', datatype: 'FP32', shape: [1, 4] }]);
    expect(fromFp32(readFileSync(join(SHM_DIR, outKey.slice(1))))).toEqual([2, 4, 6, 8]);

    // Unregistered on a third connection: every thread refuses it, including those that had read it.
    expect((await once(port, 'POST', '/v2/systemsharedmemory/region/in/unregister')).status).toBe(200);
    await onBothThreads(() =>
      Promise.all(
        range(CONNECTIONS).map(async () => {
          const refused = await fromShm();
          expect(refused.status).not.toBe(200);
          expect(json<InferBody>(refused).error).toBe("Unable to find system shared memory region: 'in'");
        }),
      ),
    );
    // The same name registered again for another object: every thread reads the new one.
    expect((await register('in', keyB)).status).toBe(200);
    await onBothThreads(() =>
      Promise.all(
        range(CONNECTIONS).map(async () => {
          const answer = await fromShm();
          expect([answer.status, json<InferBody>(answer).outputs?.[0]?.data]).toEqual([200, [20, 40, 60, 80]]);
        }),
      ),
    );
    expect((await once(port, 'POST', '/v2/systemsharedmemory/unregister')).status).toBe(200);
    expect(json<unknown[]>(await once(port, 'GET', '/v2/systemsharedmemory/status'))).toEqual([]);
  });

  it('reads and writes a shared-memory object made again under the same key and registered again under the same name, on every thread', async () => {
    // tritonclient's pattern: destroy a region (unregister, unlink the object), create it again with the same name
    // and key, register it again. Nothing in between reaches the threads, so only the registration tells the new
    // object from the one each thread had open.
    const key = `tstriton-fe-${process.pid}-again`;
    const outKey = `tstriton-fe-${process.pid}-again-out`;
    const make = (k: string, values: number[]) => {
      const file = join(SHM_DIR, k);
      rmSync(file, { force: true });
      shmFiles.push(file);
      writeFileSync(file, fp32(values));
    };
    const register = async (region: string, k: string) => expect((await once(port, 'POST', `/v2/systemsharedmemory/region/${region}/register`, { key: `/${k}`, offset: 0, byte_size: 16 })).status).toBe(200);
    const unregister = async (region: string) => expect((await once(port, 'POST', `/v2/systemsharedmemory/region/${region}/unregister`)).status).toBe(200);
    const inOut = () =>
      once(port, 'POST', '/v2/models/double/infer', {
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 4], parameters: { shared_memory_region: 'again', shared_memory_byte_size: 16 } }],
        outputs: [{ name: 'y', parameters: { shared_memory_region: 'again_out', shared_memory_byte_size: 16 } }],
      });
    const written = () => fromFp32(readFileSync(join(SHM_DIR, outKey)));
    const round = async (values: number[]) => {
      make(key, values);
      make(outKey, [0, 0, 0, 0]);
      await register('again', key);
      await register('again_out', outKey);
      await onBothThreads(() =>
        Promise.all(
          range(CONNECTIONS).map(async () => {
            const answer = await inOut();
            expect([answer.status, json<InferBody>(answer).outputs]).toEqual([200, [{ name: 'y', datatype: 'FP32', shape: [1, 4] }]]);
            expect(written()).toEqual(values.map((v) => 2 * v));
          }),
        ),
      );
      await unregister('again');
      await unregister('again_out');
    };
    await round([1, 2, 3, 4]);
    await round([5, 6, 7, 8]);
    await round([9, 10, 11, 12]);
  });

  it('answers the same request from the one response cache, whichever connection and thread it comes on', async () => {
    const answers = await onBothThreads(async () => {
      const out: Answer[] = [];
      for (const i of range(CONNECTIONS)) out.push(await once(port, 'POST', '/v2/models/cached/infer', inferBody([5, 6, 7], { id: `c${i}` })));
      return out;
    });
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(json<InferBody>(a)).toMatchObject({ id: `c${i}`, outputs: [{ name: 'y', data: [10, 12, 14] }] });
    });
    expect(cachedRan).toEqual(['c0']);
    const stats = await statsOf('cached');
    expect(stats.inference_stats.cache_miss.count).toBe(1);
    expect(stats.inference_stats.cache_hit.count).toBe(CONNECTIONS - 1);
  });

  it('refuses a restricted API without its header and serves it with the header, on every thread', async () => {
    await onBothThreads(() =>
      Promise.all(
        range(CONNECTIONS).map(async () => {
          const refused = await once(port, 'POST', '/v2/repository/index', {});
          expect([refused.status, json<unknown>(refused)]).toEqual([403, { error: "This API is restricted, expecting header 'admin-key'" }]);
          const unload = await once(port, 'POST', '/v2/repository/models/double/unload', {});
          expect(unload.status).toBe(403);
          const allowed = await once(port, 'POST', '/v2/repository/index', {}, { 'Admin-Key': 'secret' });
          expect(allowed.status).toBe(200);
          expect(json<{ name: string; state: string }[]>(allowed).find((m) => m.name === 'double')?.state).toBe('READY');
        }),
      ),
    );
    expect((await once(port, 'GET', '/v2/models/double/ready')).status).toBe(200);
  });

  it.each([
    ['the OpenAI port', 'openai'],
    ['the HTTP port', 'http'],
  ] as const)('streams an OpenAI completion over %s from every thread: chunks, then [DONE]', async (_label, name) => {
    const prompt = '<|user|>\nthreads serve this\n<|assistant|>\n';
    const answers = await onBothThreads(() => Promise.all(range(CONNECTIONS).map(() => once(triton.ports[name] as number, 'POST', '/v1/completions', { model: 'echo_chat', prompt, stream: true }))));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toMatch(/^text\/event-stream/);
      const data = events(answer.body);
      expect(data[data.length - 1]).toBe('[DONE]');
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d) as { object: string; choices: { text: string; finish_reason: string | null }[] });
      expect(chunks.every((c) => c.object === 'text_completion')).toBe(true);
      expect(chunks.map((c) => c.choices[0]!.text).join('')).toBe('You said: threads serve this');
      expect(chunks.map((c) => c.choices[0]!.finish_reason).filter(Boolean)).toEqual(['stop']);
    }
  });

  it.each([
    ['a string, applied on the front-end thread', 'template_text', '<[user] hi;[assistant] >'],
    ['a function, applied in the core', 'template_function', '<USER=hi>'],
  ])('makes a chat prompt from a chat template that is %s, on every thread', async (_label, model, content) => {
    const answers = await onBothThreads(() => Promise.all(range(CONNECTIONS).map(() => once(port, 'POST', '/v1/chat/completions', { model, messages: [{ role: 'user', content: 'hi' }] }))));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect((JSON.parse(answer.body) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(content);
    }
  });

  it('serves gRPC on every thread: ModelInfer, and a decoupled model over ModelStreamInfer', async () => {
    const grpcPort = triton.ports.grpc as number;
    // The project's own client.
    const client = new ModelClient(`grpc://127.0.0.1:${grpcPort}`, 'double');
    const chat = new ModelClient(`grpc://127.0.0.1:${grpcPort}`, 'echo_chat');
    try {
      const out = await client.inferSample({ x: Float32Array.of(1, 2, 3) });
      expect(Array.from(out.y!.data as Float32Array)).toEqual([2, 4, 6]);
      const words: string[] = [];
      for await (const r of chat.stream({ text_input: ['<|user|>\nover grpc\n<|assistant|>\n'] })) words.push(Buffer.from((r.outputs.text_output!.data as Uint8Array[])[0]!).toString());
      expect(words).toEqual(['You ', 'said: ', 'over ', 'grpc']);
    } finally {
      client.close();
      chat.close();
    }

    // A connection per client: the kernel spreads them over the threads.
    const connections = range(CONNECTIONS).map(() => new GrpcConnection(grpcPort));
    try {
      await onBothThreads(() =>
        Promise.all(
          connections.map(async (c, i) => {
            const answer = await c.unary<ModelInferResponseMessage>('ModelInfer', { model_name: 'double', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [fp32([i, 1])] });
            expect(fromFp32(answer.raw_output_contents[0])).toEqual([2 * i, 2]);
            const responses = await c.stream([
              {
                model_name: 'echo_chat',
                id: `s${i}`,
                inputs: [{ name: 'text_input', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(`<|user|>\nstream ${i}\n<|assistant|>\n`)] } }],
              } as unknown as ModelInferRequestMessage,
            ]);
            expect(responses.map((r) => r.error_message)).toEqual(['', '', '', '']);
            const text = responses.map((r) => {
              const raw = Buffer.from(r.infer_response!.raw_output_contents[0]!);
              return raw.subarray(4, 4 + raw.readUInt32LE(0)).toString();
            });
            expect(text.join('')).toBe(`You said: stream ${i}`);
            expect(responses.every((r) => r.infer_response?.id === `s${i}`)).toBe(true);
          }),
        ),
      );
    } finally {
      for (const c of connections) c.close();
    }
  });
});

describe('httpThreadCount with routes on http.router', () => {
  const withRoute = (httpThreadCount: number): Triton => {
    const triton = track(loopbackTriton({ httpThreadCount }));
    triton.http.router.get('/hello', (_req, res) => void res.send('hello'));
    return triton;
  };

  it('refuses to start with INVALID_CONFIG naming httpThreadCount', async () => {
    const triton = withRoute(2);
    try {
      await expect(triton.run()).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/httpThreadCount/) });
      expect(frontEndThreads()).toEqual([]);
      expect(triton.ports.http).toBeUndefined();
    } finally {
      await triton.stop();
    }
  });

  it('serves the route with httpThreadCount: 1', async () => {
    const triton = withRoute(1);
    try {
      await triton.run();
      const answer = await once(triton.ports.http as number, 'GET', '/hello');
      expect([answer.status, answer.body]).toEqual([200, 'hello']);
    } finally {
      await triton.stop();
    }
  });
});
