import { Readable } from 'node:stream';
import { type Triton, tensor, type Request, type Tensor } from 'tstriton';
import { ClientError, ModelClient, type StreamOptions, type StreamResponse } from 'tstriton/client';
import { batch, sample } from 'tstriton/decorators';
import { bindStreamTokens } from '../../examples/streaming/model';
import { serverSentEvents } from '../../lib/client/server-sent-events';
import { loopbackTriton } from '../helpers/loopback-triton';

/** What the `words` model saw, counted over all its requests. */
interface Seen {
  started: number;
  aborted: number;
  closed: number;
}

/** Named events the models note; `when(name, n)` resolves once `name` has been noted `n` times. */
class Signals {
  private waiters: { name: string; n: number; resolve: () => void }[] = [];
  private counts = new Map<string, number>();
  note(name: string): void {
    const n = (this.counts.get(name) ?? 0) + 1;
    this.counts.set(name, n);
    this.waiters = this.waiters.filter((w) => (w.name === name && w.n <= n ? (w.resolve(), false) : true));
  }
  when(name: string, n = 1): Promise<void> {
    if ((this.counts.get(name) ?? 0) >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ name, n, resolve }));
  }
}

const seen: Seen = { started: 0, aborted: 0, closed: 0 };
let signals: Signals;
let triton: Triton;
const clients: ModelClient[] = [];

/**
 * `words` streams the words of TEXT: 'boom' throws mid-stream, 'explode' throws before the first response,
 * 'hang' waits until the request is aborted. It records starts, aborts and generator closes.
 */
function bindWords(t: Triton): void {
  t.bind({
    modelName: 'words',
    inferFunc: sample(async function* (inputs: Record<string, Tensor>, request: Request) {
      seen.started++;
      signals.note('started');
      request.signal.addEventListener('abort', () => {
        seen.aborted++;
        signals.note('aborted');
      });
      try {
        const text = Buffer.from((inputs.TEXT as Tensor<'BYTES'>).data[0] ?? []).toString();
        if (text === 'explode') throw new Error('generator exploded');
        for (const w of text.split(' ')) {
          if (w === 'boom') throw new Error('exploded mid-stream');
          if (w === 'hang') {
            signals.note('hanging');
            await new Promise<void>((resolve) => request.signal.addEventListener('abort', () => resolve(), { once: true }));
            return;
          }
          yield { WORD: tensor('BYTES', [1], [w]) };
        }
      } finally {
        seen.closed++;
        signals.note('closed');
      }
    }),
    inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
    outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
    config: { batching: false, decoupled: true },
  });
}

beforeEach(async () => {
  Object.assign(seen, { started: 0, aborted: 0, closed: 0 });
  signals = new Signals();
  triton = loopbackTriton({ allowGrpc: true });
  bindStreamTokens(triton);
  bindWords(triton);
  triton.bind({
    modelName: 'counter',
    inferFunc: batch(async function* ({ N }: Record<string, Tensor>) {
      const n = N!.data as Int32Array;
      for (let step = 1; step <= 3; step++) yield { OUT: tensor('INT32', N!.shape, n.map((v) => v * step)), HALF: tensor('FP64', N!.shape, Float64Array.from(n, (v) => (v * step) / 2)) };
    }),
    inputs: [{ name: 'N', dtype: 'INT32', shape: [1] }],
    outputs: [
      { name: 'OUT', dtype: 'INT32', shape: [1] },
      { name: 'HALF', dtype: 'FP64', shape: [1] },
    ],
    config: { maxBatchSize: 8, decoupled: true },
  });
  triton.bind({
    modelName: 'double',
    inferFunc: batch(async ({ x }) => ({ y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v * 2)) })),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'half',
    inferFunc: sample(async ({ h }) => ({ h: h! })),
    inputs: [{ name: 'h', dtype: 'FP16', shape: [1] }],
    outputs: [{ name: 'h', dtype: 'FP16', shape: [1] }],
    config: { batching: false },
  });
  await triton.run();
});

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await triton.stop();
});

function client(protocol: 'http' | 'grpc', model: string): ModelClient {
  const port = protocol === 'http' ? triton.ports.http : triton.ports.grpc;
  const c = new ModelClient(`${protocol}://127.0.0.1:${port}`, model);
  clients.push(c);
  return c;
}

const text = (t: Tensor | undefined): string => Buffer.from((t?.data as Uint8Array[])[0] ?? []).toString();

/** Reads a whole stream; a failure is returned with the responses before it. */
async function collect(stream: AsyncIterable<StreamResponse>): Promise<{ responses: StreamResponse[]; error?: ClientError }> {
  const responses: StreamResponse[] = [];
  try {
    for await (const r of stream) responses.push(r);
  } catch (err) {
    expect(err).toBeInstanceOf(ClientError);
    return { responses, error: err as ClientError };
  }
  return { responses };
}

/** Waits until `check` holds: the server records statistics after the client has seen the end. */
async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

const PROMPT = 'the quick brown fox jumps';

it('receives the same token sequence over gRPC and HTTP', async () => {
  const read = async (protocol: 'http' | 'grpc') =>
    (await collect(client(protocol, 'stream_tokens').stream({ PROMPT: [PROMPT] }, { id: `req-${protocol}` }))).responses;
  const [overGrpc, overHttp] = await Promise.all([read('grpc'), read('http')]);
  for (const [protocol, responses] of [
    ['grpc', overGrpc],
    ['http', overHttp],
  ] as const) {
    expect(responses.map((r) => text(r.outputs.TOKEN))).toEqual(PROMPT.split(' '));
    expect(responses.map((r) => r.outputs.TOKEN?.shape)).toEqual(PROMPT.split(' ').map(() => [1]));
    // A decoupled model's last response is the empty final one, which is not yielded.
    expect(responses.every((r) => !r.final && r.id === `req-${protocol}`)).toBe(true);
  }
  await until(() => triton.repository.get('stream_tokens').statistics.success.count === 2);
});

describe.each(['grpc', 'http'] as const)('ModelClient.stream over %s', (protocol) => {
  it('decodes typed outputs of a batching decoupled model without the batch dimension, and only the outputs asked for', async () => {
    const { responses } = await collect(client(protocol, 'counter').stream({ N: Int32Array.of(7) }));
    expect(responses.map((r) => r.outputs)).toEqual([1, 2, 3].map((step) => ({ OUT: tensor('INT32', [1], Int32Array.of(7 * step)), HALF: tensor('FP64', [1], Float64Array.of((7 * step) / 2)) })));
    const only = await collect(client(protocol, 'counter').stream({ N: Int32Array.of(2) }, { outputs: ['HALF'] }));
    expect(only.responses.map((r) => Object.keys(r.outputs))).toEqual([['HALF'], ['HALF'], ['HALF']]);
  });

  it('streams the one response of a non-decoupled model, marked final', async () => {
    const { responses } = await collect(client(protocol, 'double').stream({ x: Float32Array.of(1, 2, 3) }));
    expect(responses).toEqual([{ outputs: { y: tensor('FP32', [3], Float32Array.of(2, 4, 6)) }, id: '', final: true }]);
  });

  it('ends with a CANCELLED error when the signal fires between responses, and the model sees the abort', async () => {
    const abort = new AbortController();
    const received: string[] = [];
    let error: unknown;
    try {
      for await (const r of client(protocol, 'words').stream({ TEXT: ['one two three hang'] }, { signal: abort.signal })) {
        received.push(text(r.outputs.WORD));
        if (received.length === 2) abort.abort(new Error('user gave up'));
      }
    } catch (err) {
      error = err;
    }
    expect(received).toEqual(['one', 'two']);
    expect(error).toMatchObject({ code: 'CANCELLED', status: undefined });
    expect(((error as ClientError).cause as Error).message).toBe('user gave up');
    await signals.when('closed');
    expect(seen.aborted).toBe(1);
    const model = triton.repository.get('words');
    await until(() => model.statistics.failures.CANCELED === 1);
    expect(model.liveRequests).toBe(0);
  });

  it('ends with a CANCELLED error when the signal fires while waiting for a response', async () => {
    const abort = new AbortController();
    const responses = client(protocol, 'words').stream({ TEXT: ['one hang'] }, { signal: abort.signal });
    expect(text((await responses.next()).value?.outputs.WORD)).toBe('one');
    const waiting = responses.next();
    await signals.when('hanging');
    // The pending next() has reached the wire once the microtasks queued by the call have run.
    await new Promise((r) => setImmediate(r));
    abort.abort();
    const error = await waiting.then(
      () => undefined,
      (err: unknown) => err as ClientError,
    );
    expect(error?.code).toBe('CANCELLED');
    await signals.when('aborted');
    await until(() => triton.repository.get('words').statistics.failures.CANCELED === 1);
  });

  it('fails with CANCELLED at once for a signal already aborted, sending nothing', async () => {
    const { responses, error } = await collect(client(protocol, 'words').stream({ TEXT: ['one'] }, { signal: AbortSignal.abort() }));
    expect(responses).toEqual([]);
    expect(error?.code).toBe('CANCELLED');
    expect(seen.started).toBe(0);
  });

  it('fails with DEADLINE_EXCEEDED when no response arrives within the per-response timeout, and cancels the request', async () => {
    const options: StreamOptions = { responseTimeoutSeconds: 0.3 };
    const { responses, error } = await collect(client(protocol, 'words').stream({ TEXT: ['one two hang'] }, options));
    expect(responses.map((r) => text(r.outputs.WORD))).toEqual(['one', 'two']);
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', status: undefined });
    expect(error?.message).toBe("stream of model 'words': no response within 0.3 s");
    await signals.when('aborted');
    await until(() => triton.repository.get('words').statistics.failures.CANCELED === 1);
  });

  it('fails with DEADLINE_EXCEEDED when the whole stream outlasts timeoutSeconds, while responses keep coming', async () => {
    const long = Array.from({ length: 500 }, (_, i) => `w${i}`).join(' ');
    const { responses, error } = await collect(client(protocol, 'stream_tokens').stream({ PROMPT: [long] }, { timeoutSeconds: 0.3, responseTimeoutSeconds: 5 }));
    expect(responses.length).toBeGreaterThan(0);
    expect(responses.length).toBeLessThan(500);
    expect(error?.code).toBe('DEADLINE_EXCEEDED');
    expect(error?.message).toMatch(/stream of model 'stream_tokens' did not finish within 0.3 s/);
    await until(() => triton.repository.get('stream_tokens').statistics.failures.CANCELED === 1);
  });

  it("ends with the server's error when the request's own deadline (the `timeout` parameter) passes mid-stream", async () => {
    const long = Array.from({ length: 500 }, (_, i) => `w${i}`).join(' ');
    const { responses, error } = await collect(client(protocol, 'stream_tokens').stream({ PROMPT: [long] }, { parameters: { timeout: 200_000 } }));
    expect(responses.length).toBeGreaterThan(0);
    expect(responses.length).toBeLessThan(500);
    expect(error).toMatchObject({ code: 'INTERNAL', status: undefined, message: expect.stringMatching(/Request timeout expired after 200 ms/) });
  });

  it('delivers the responses before an error mid-stream, then fails with the server message', async () => {
    const { responses, error } = await collect(client(protocol, 'words').stream({ TEXT: ['one two boom three'] }));
    expect(responses.map((r) => text(r.outputs.WORD))).toEqual(['one', 'two']);
    expect(error).toMatchObject({ code: 'INTERNAL', status: undefined, message: 'exploded mid-stream' });
    await until(() => triton.repository.get('words').statistics.failures.BACKEND + triton.repository.get('words').statistics.failures.OTHER === 1);
  });

  it('fails for an error before the first response', async () => {
    const { responses, error } = await collect(client(protocol, 'words').stream({ TEXT: ['explode'] }));
    expect(responses).toEqual([]);
    expect(error?.message).toBe('generator exploded');
    // HTTP answers with a status before streaming; a gRPC stream carries the message only.
    expect(error).toMatchObject(protocol === 'http' ? { code: 'INTERNAL', status: 500 } : { code: 'INTERNAL', status: undefined });
  });

  it('fails for a request the server refuses', async () => {
    const { error } = await collect(client(protocol, 'words').stream({ TEXT: { shape: [2], data: ['a', 'b'] } }));
    expect(error?.message).toMatch(/TEXT/);
    if (protocol === 'http') expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', status: 400 });
  });

  it('cancels the request on the server when the loop is left early', async () => {
    const received: string[] = [];
    for await (const r of client(protocol, 'words').stream({ TEXT: ['one two three hang'] })) {
      received.push(text(r.outputs.WORD));
      if (received.length === 1) break;
    }
    expect(received).toEqual(['one']);
    await signals.when('closed');
    expect(seen.aborted).toBe(1);
    const model = triton.repository.get('words');
    await until(() => model.statistics.failures.CANCELED === 1);
    expect(model.liveRequests).toBe(0);
  });

  it('runs concurrent streams on one client independently', async () => {
    const c = client(protocol, 'stream_tokens');
    const prompts = ['a b c', 'd e', 'f g h i'];
    const results = await Promise.all(prompts.map((p) => collect(c.stream([[p]]))));
    expect(results.map((r) => r.responses.map((x) => text(x.outputs.TOKEN)).join(' '))).toEqual(prompts);
  });

  it('refuses to stream after close()', async () => {
    const c = client(protocol, 'stream_tokens');
    c.close();
    const { error } = await collect(c.stream({ PROMPT: ['a'] }));
    expect(error).toMatchObject({ code: 'UNAVAILABLE' });
  });
});

it('refuses FP16 inputs over HTTP streaming, which carries JSON values only', async () => {
  const { error } = await collect(client('http', 'half').stream({ h: Uint16Array.of(0x3c00) }));
  expect(error).toMatchObject({ code: 'INVALID_ARGUMENT', status: undefined });
  expect(error?.message).toMatch(/FP16 values have no JSON form/);
  const overGrpc = await collect(client('grpc', 'half').stream({ h: Uint16Array.of(0x3c00) }));
  expect(overGrpc.responses.map((r) => r.outputs.h)).toEqual([tensor('FP16', [1], Uint16Array.of(0x3c00))]);
});

// The SSE parser against bodies no tstriton server sends but other servers may: CR line ends, split chunks, comments.
describe('serverSentEvents', () => {
  async function events(chunks: string[]): Promise<string[]> {
    const out: string[] = [];
    for await (const e of serverSentEvents(Readable.from(chunks.map((c) => Buffer.from(c))))) out.push(e);
    return out;
  }

  it.each([
    ['one event per blank line', ['data: {"a":1}\n\ndata: {"a":2}\n\n'], ['{"a":1}', '{"a":2}']],
    ['events split across chunks', ['data: h', 'el', 'lo\n', '\ndata:x\n\n'], ['hello', 'x']],
    ['\\r\\n and \\r line ends, a \\r\\n split between chunks', ['data: a\r', '\n\r\ndata: b\r\rdata: c\n\n'], ['a', 'b', 'c']],
    ['several data lines joined, comments and other fields skipped', [': keep-alive\n\nevent: x\ndata: 1\ndata: 2\nid: 7\n\n'], ['1\n2']],
    ['an event cut off by the end of the body is dropped', ['data: a\n\ndata: b\n'], ['a']],
  ])('%s', async (_, chunks, expected) => {
    expect(await events(chunks)).toEqual(expected);
  });

  it('decodes a multi-byte character split between two chunks', async () => {
    const bytes = Buffer.from('data: é\n\n');
    const out: string[] = [];
    for await (const e of serverSentEvents(Readable.from([bytes.subarray(0, 7), bytes.subarray(7)]))) out.push(e);
    expect(out).toEqual(['é']);
  });
});
