import * as grpc from '@grpc/grpc-js';
import { type Triton, tensor, type Request, type Tensor, type TritonConfigInit } from 'tstriton';
import { batch, sample } from 'tstriton/decorators';
import { bindSequenceAccumulate } from '../../examples/sequence/model';
import { loadProtos } from '../../lib/protocol/protos';
import type { InferParameterMap, ModelInferRequestMessage, ModelStreamInferResponseMessage } from '../../lib/protocol/messages';
import type { InferCall, ResponseSink } from '../../lib/server/infer-entry';
import { Gate } from '../helpers/gate';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// A ModelStreamInfer stream answers the requests of models that are not decoupled in the order they arrived, as
// Triton's stream handler does, whichever stage answers one first: an error found while decoding (on a front-end
// thread, before the core sees the request), an error from the core, a response. A decoupled model's responses go
// out as produced, without waiting for the requests before them. Each case runs on one front-end thread (the ports
// on the core thread) and on two, where decoding happens on a front-end thread and the core answers later.

const services = loadProtos('number');
const STREAM = services.inference.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;

const CONFIG: TritonConfigInit = { allowGrpc: true, exitTimeoutSeconds: 5 };

const FP32 = { inputs: [{ name: 'INPUT0', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'OUTPUT0', dtype: 'FP32' as const, shape: [-1] }] };

/** One ModelStreamInfer call, read as it goes: the responses so far, and a wait for the n-th. */
class OrderedStream {
  readonly responses: ModelStreamInferResponseMessage[] = [];
  readonly call: grpc.ClientDuplexStream<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
  private readonly ended: Promise<ModelStreamInferResponseMessage[]>;
  private waiters: { n: number; resolve: () => void }[] = [];

  constructor(client: grpc.Client) {
    this.call = client.makeBidiStreamRequest(STREAM.path, STREAM.requestSerialize, STREAM.responseDeserialize);
    this.ended = new Promise((resolve, reject) => {
      this.call.on('data', (m: ModelStreamInferResponseMessage) => {
        this.responses.push(m);
        this.waiters = this.waiters.filter((w) => (w.n <= this.responses.length ? void w.resolve() : true));
      });
      this.call.on('error', reject);
      this.call.on('end', () => resolve(this.responses));
    });
    // A stream the test cancels fails without anyone awaiting `end()`.
    this.ended.catch(() => undefined);
  }

  send(...requests: ModelInferRequestMessage[]): void {
    for (const r of requests) this.call.write(r);
  }

  /** Resolves once `n` responses have arrived. */
  received(n: number): Promise<void> {
    if (this.responses.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }

  /** Half-closes the stream; resolves with every response once the server has ended it. */
  end(): Promise<ModelStreamInferResponseMessage[]> {
    this.call.end();
    return this.ended;
  }
}

const fp32Request = (model: string, id: string, values: number[]): ModelInferRequestMessage => ({
  model_name: model,
  id,
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length] }],
  raw_input_contents: [Buffer.from(Float32Array.from(values).buffer)],
});

const sequenceRequest = (id: string, value: number, parameters: InferParameterMap): ModelInferRequestMessage => ({
  model_name: 'sequence_accumulate',
  id,
  parameters,
  inputs: [{ name: 'INPUT', datatype: 'INT32', shape: [1, 1] }],
  raw_input_contents: [Buffer.from(Int32Array.of(value).buffer)],
});

const ids = (responses: ModelStreamInferResponseMessage[]): string[] => responses.map((r) => r.infer_response?.id ?? '');
const int32 = (r: ModelStreamInferResponseMessage): number[] => Array.from(new Int32Array(Uint8Array.from(r.infer_response!.raw_output_contents[0]!).buffer));

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Watches the core's entry as the gRPC transport calls it, which on one front-end thread is the Triton itself:
 * `handed(id)` resolves once request `id`'s response has been handed to the stream (the moment a stream that
 * writes in completion order writes it), `settled(model)` once that model's request is over for the core.
 */
function watchEntry(triton: Triton): { handed(id: string): Promise<void>; settled(model: string): Promise<void> } {
  const handed = new Map<string, Deferred>();
  const settled = new Map<string, Deferred>();
  const of = (map: Map<string, Deferred>, key: string): Deferred => map.get(key) ?? map.set(key, deferred()).get(key)!;
  const original = triton.inferAsync.bind(triton);
  jest.spyOn(triton, 'inferAsync').mockImplementation((call: InferCall, sink: ResponseSink) => {
    const run = original(call, (response, final) => {
      const taken = sink(response, final);
      of(handed, response.id).resolve();
      return taken;
    });
    const over = () => of(settled, call.modelName).resolve();
    run.then(over, over);
    return run;
  });
  return { handed: (id) => of(handed, id).promise, settled: (model) => of(settled, model).promise };
}

describe.each([1, 2])('a ModelStreamInfer stream on %i front-end thread(s)', (threads) => {
  let triton: Triton;
  let client: grpc.Client;
  /** Holds each request of `slow` until the test opens it; a new one per test. */
  let gate: Gate;

  beforeAll(async () => {
    triton = track(loopbackTriton({ ...CONFIG, httpThreadCount: threads }));
    bindSequenceAccumulate(triton);
    triton.bind({ modelName: 'slow', inferFunc: (requests: Request[]) => gate.callable(requests), ...FP32, config: { maxBatchSize: 8 } });
    triton.bind({ modelName: 'fast', inferFunc: batch(async ({ INPUT0 }: Record<string, Tensor>) => ({ OUTPUT0: INPUT0! })), ...FP32, config: { maxBatchSize: 8 } });
    triton.bind({
      modelName: 'words',
      inferFunc: sample(async function* (inputs: Record<string, Tensor>) {
        for (const w of Buffer.from((inputs.TEXT as Tensor<'BYTES'>).data[0]!).toString().split(' ')) yield { WORD: tensor('BYTES', [1], [w]) };
      }),
      inputs: [{ name: 'TEXT', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'WORD', dtype: 'BYTES', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    await triton.run();
  }, 120_000);

  beforeEach(() => {
    gate = new Gate();
    client = new grpc.Client(`127.0.0.1:${triton.ports.grpc}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  });

  afterEach(() => {
    gate.open();
    client.close();
    jest.restoreAllMocks();
  });

  afterAll(() => triton?.stop(), 60_000);

  it('answers a core error, a decoding error and a sequence in request order', async () => {
    const stream = new OrderedStream(client);
    stream.send(
      // The core refuses it: sequence 5552 has no START.
      sequenceRequest('A', 1, { sequence_id: { int64_param: 5552 } }),
      // Refused while the request is decoded (on a front-end thread, before the core sees it): a double is no correlation id.
      sequenceRequest('B', 2, { sequence_id: { double_param: 1.5 }, sequence_start: { bool_param: true } }),
      sequenceRequest('C', 4, { sequence_id: { int64_param: 5553 }, sequence_start: { bool_param: true } }),
      sequenceRequest('D', 5, { sequence_id: { int64_param: 5553 }, sequence_end: { bool_param: true } }),
    );
    const responses = await stream.end();
    expect(ids(responses)).toEqual(['A', 'B', 'C', 'D']);
    const [a, b, c, d] = responses as [ModelStreamInferResponseMessage, ModelStreamInferResponseMessage, ModelStreamInferResponseMessage, ModelStreamInferResponseMessage];
    expect(a.error_message).toBe("inference request for sequence 5552 to model 'sequence_accumulate' must specify the START flag on the first request of the sequence");
    expect(b.error_message).toMatch(/^invalid value type for 'sequence_id' parameter, expected int64_param or string_param/);
    expect([c.error_message, int32(c)]).toEqual(['', [4]]);
    expect([d.error_message, int32(d)]).toEqual(['', [9]]);
  });

  it("writes a decoupled model's responses while a request before it runs, and holds a regular one behind it", async () => {
    const stream = new OrderedStream(client);
    stream.send(fp32Request('slow', 'slow', [1]));
    await gate.started;
    stream.send(
      { model_name: 'words', id: 'words', parameters: { triton_enable_empty_final_response: { bool_param: true } }, inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('a b')] } }] },
      fp32Request('fast', 'fast', [2]),
    );
    // Two words and the empty final response, all while `slow` is held: had they waited for it, this would hang.
    await stream.received(3);
    gate.open();
    const responses = await stream.end();
    expect(ids(responses)).toEqual(['words', 'words', 'words', 'slow', 'fast']);
    expect(responses.map((r) => r.error_message)).toEqual(['', '', '', '', '']);
  });

  // The core's entry is watched in this process only when it serves the ports itself.
  if (threads !== 1) return;

  it('answers a slow request before the refused and the fast requests behind it, which were ready first', async () => {
    const entry = watchEntry(triton);
    const stream = new OrderedStream(client);
    stream.send(fp32Request('slow', 'slow', [1]));
    await gate.started;
    stream.send(fp32Request('nope', 'refused', [2]), fp32Request('fast', 'fast', [3]));
    // By now the refusal is answered (it is refused the moment it arrives) and so is `fast`: a stream in completion
    // order has written both.
    await entry.handed('fast');
    gate.open();
    const responses = await stream.end();
    expect(ids(responses)).toEqual(['slow', 'refused', 'fast']);
    expect(responses.map((r) => r.error_message)).toEqual(['', "Request for unknown model: 'nope' is not found", '']);
  });

  it('lets go of the answers it holds when the client cancels the stream', async () => {
    const entry = watchEntry(triton);
    const stream = new OrderedStream(client);
    stream.send(fp32Request('slow', 'slow', [1]));
    await gate.started;
    stream.send(fp32Request('fast', 'fast', [2]));
    await entry.handed('fast');
    stream.call.cancel();
    await gate.aborted;
    // `fast`'s answer was held behind `slow` and will never be written: its request ends all the same.
    await entry.settled('fast');
    expect(stream.responses).toEqual([]);
  });
});
