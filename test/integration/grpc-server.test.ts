import * as grpc from '@grpc/grpc-js';
import { DATA_TYPES, type Triton, TritonError, type DataType, type Request, type TritonConfigInit } from 'tstriton';
import { DTYPES } from '../../lib/tensor/dtype';
import { batch } from 'tstriton/decorators';
import { loadProtos } from '../../lib/protocol/protos';
import type {
  HealthCheckResponseMessage,
  ModelConfigResponseMessage,
  ModelInferRequestMessage,
  ModelInferResponseMessage,
  ModelStreamInferResponseMessage,
} from '../../lib/protocol/messages';
import { Gate } from '../helpers/gate';
import { rejectionOf } from '../helpers/caught';
import { loopbackTriton } from '../helpers/loopback-triton';

// ---- helpers -------------------------------------------------------------------------------------


const identity = batch(async (inputs) => ({ OUTPUT0: inputs.INPUT0! }));

function bindModels(triton: Triton, gate: Gate): void {
  for (const dtype of DATA_TYPES) {
    triton.bind({
      modelName: `identity_${dtype.toLowerCase()}`,
      inferFunc: identity,
      inputs: [{ name: 'INPUT0', dtype, shape: [-1] }],
      outputs: [{ name: 'OUTPUT0', dtype, shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
  }
  triton.bind({
    modelName: 'echo_param',
    inferFunc: async (requests: Request[]) =>
      requests.map((r) => ({ OUTPUT0: { dtype: 'BYTES', shape: [1, 1], data: [String(r.parameters.tag ?? '')] } })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'BYTES', shape: [1] }],
    config: { maxBatchSize: 8, batcher: null },
  });
  triton.bind({
    modelName: 'two_outputs',
    inferFunc: batch(async (inputs) => ({ A: inputs.INPUT0!, B: inputs.INPUT0! })),
    inputs: [{ name: 'INPUT0', dtype: 'INT32', shape: [-1] }],
    outputs: [
      { name: 'A', dtype: 'INT32', shape: [-1] },
      { name: 'B', dtype: 'INT32', shape: [-1] },
    ],
    config: { maxBatchSize: 8 },
  });
  triton.bind({
    modelName: 'hang',
    inferFunc: gate.callable,
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8, batcher: { defaultQueuePolicy: { maxQueueSize: 1 } } },
  });
  triton.bind({
    modelName: 'fails',
    inferFunc: async () => {
      throw new Error('model exploded');
    },
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
  });
  triton.bind({
    modelName: 'decoupled',
    inferFunc: identity,
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { decoupled: true },
  });
  triton.bind({
    modelName: 'not_ready',
    inferFunc: identity,
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
  });
}

const BASE: TritonConfigInit = { allowGrpc: true, strictReadiness: false };

const services = loadProtos('number');

/** A raw grpc-js client on the same protos, for calls exactly as a foreign client would make them. */
class RawClient {
  readonly client: grpc.Client;
  constructor(port: number, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      ...options,
    });
  }
  call<Res>(rpc: string, request: object, options: grpc.CallOptions = {}, service = services.inference): Promise<Res> & { call?: grpc.ClientUnaryCall } {
    const def = service[rpc] as grpc.MethodDefinition<object, Res>;
    let call: grpc.ClientUnaryCall | undefined;
    const p = new Promise<Res>((resolve, reject) => {
      call = this.client.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, new grpc.Metadata(), options, (err, value) =>
        err ? reject(err) : resolve(value as Res),
      );
    }) as Promise<Res> & { call?: grpc.ClientUnaryCall };
    p.call = call;
    return p;
  }
  stream(): grpc.ClientDuplexStream<ModelInferRequestMessage, ModelStreamInferResponseMessage> {
    const def = services.inference.ModelStreamInfer as grpc.MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;
    return this.client.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize);
  }
  health(): Promise<HealthCheckResponseMessage> {
    return this.call<HealthCheckResponseMessage>('Check', { service: '' }, {}, services.health);
  }
  close(): void {
    this.client.close();
  }
}

/** Little-endian bytes of a typed array, or length-prefixed BYTES. */
function raw(data: ArrayBufferView | readonly Uint8Array[]): Buffer {
  if (Array.isArray(data)) return Buffer.concat(data.flatMap((e: Uint8Array) => [Buffer.from(Uint32Array.of(e.length).buffer), Buffer.from(e)]));
  const v = data as ArrayBufferView;
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function fp32Request(model: string, values: number[], extra: Partial<ModelInferRequestMessage> = {}): ModelInferRequestMessage {
  return {
    model_name: model,
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length] }],
    raw_input_contents: [raw(Float32Array.from(values))],
    ...extra,
  };
}

const rejection = (p: Promise<unknown>): Promise<grpc.ServiceError> => rejectionOf<grpc.ServiceError>(p);

// ---- suite ---------------------------------------------------------------------------------------

let triton: Triton;
let client: RawClient;
let gate: Gate;

async function start(config: TritonConfigInit = {}): Promise<void> {
  gate = new Gate();
  triton = loopbackTriton({ ...BASE, ...config });
  bindModels(triton, gate);
  await triton.run();
  triton.repository.get('not_ready').state = 'LOADING';
  client = new RawClient(triton.ports.grpc as number);
}

afterEach(async () => {
  gate?.open();
  client?.close();
  await triton?.stop();
});

describe('gRPC server: metadata RPCs', () => {
  beforeEach(() => start());

  it('answers ServerLive, ServerReady and ServerMetadata', async () => {
    expect(await client.call('ServerLive', {})).toEqual({ live: true });
    expect(await client.call('ServerReady', {})).toEqual({ ready: true });
    expect(await client.call('ServerMetadata', {})).toEqual(triton.metadata());
  });

  it('reports the port it bound under ports.grpc', () => {
    expect(triton.ports.grpc).toBeGreaterThan(0);
    expect(triton.ports.grpc).not.toBe(triton.ports.http);
  });

  it('answers ModelReady: true, false for a model not ready, OK with ready false for an unknown model or version (as Triton)', async () => {
    expect(await client.call('ModelReady', { name: 'identity_fp32', version: '' })).toEqual({ ready: true });
    expect(await client.call('ModelReady', { name: 'not_ready', version: '1' })).toEqual({ ready: false });
    expect(await client.call('ModelReady', { name: 'nope', version: '' })).toEqual({ ready: false });
    expect(await client.call('ModelReady', { name: 'identity_fp32', version: '7' })).toEqual({ ready: false });
  });

  it('returns the same model metadata as HTTP', async () => {
    const http = await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/two_outputs`)).json();
    expect(await client.call('ModelMetadata', { name: 'two_outputs', version: '' })).toEqual(http);
  });

  it.each(['identity_fp32', 'identity_bytes', 'hang', 'decoupled', 'fails'])('returns the config of %s with the same content as the HTTP JSON', async (name) => {
    const http = await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/${name}/config`)).json();
    const { config } = await client.call<ModelConfigResponseMessage>('ModelConfig', { name, version: '' });
    expect(withoutNulls(config)).toEqual(http);
  });

  it('answers ModelStatistics with the same statistics as HTTP', async () => {
    await client.call('ModelInfer', fp32Request('identity_fp32', [1, 2]));
    const http = await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/identity_fp32/stats`)).json();
    const grpcStats = await client.call<{ model_stats: Record<string, unknown>[] }>('ModelStatistics', { name: 'identity_fp32', version: '' });
    expect(grpcStats).toEqual(http);
    expect((grpcStats.model_stats[0] as { inference_count: number }).inference_count).toBe(1);
    const all = await client.call<{ model_stats: { name: string }[] }>('ModelStatistics', { name: '', version: '' });
    expect(all.model_stats.map((m) => m.name)).toContain('two_outputs');
    expect(all.model_stats.map((m) => m.name)).not.toContain('not_ready');
  });

  it('answers the shared-memory RPCs: no regions, and registration refused while shared memory is off', async () => {
    expect(await client.call('SystemSharedMemoryStatus', {})).toEqual({ regions: {} });
    expect(await client.call('CudaSharedMemoryStatus', {})).toEqual({ regions: {} });
    expect(await client.call('CudaSharedMemoryUnregister', {})).toEqual({});
    const off = await rejection(client.call('SystemSharedMemoryRegister', { name: 'r', key: '/k', byte_size: 8 }));
    expect(off.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(off.details).toMatch(/^Client shared memory is disabled/);
    const cuda = await rejection(client.call('CudaSharedMemoryRegister', { name: 'r', byte_size: 8 }));
    expect(cuda.code).toBe(grpc.status.UNIMPLEMENTED);
  });

});

function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, withoutNulls(v)]));
}

/** Two rows of sample data per datatype, covering the edges the wire must keep. */
const SAMPLES: Record<DataType, () => ArrayBufferView | Uint8Array[]> = {
  BOOL: () => Uint8Array.of(1, 0, 1, 1),
  UINT8: () => Uint8Array.of(0, 255, 7, 9),
  UINT16: () => Uint16Array.of(0, 65535, 7, 9),
  UINT32: () => Uint32Array.of(0, 4294967295, 7, 9),
  UINT64: () => BigUint64Array.of(0n, 2n ** 64n - 1n, 2n ** 53n + 1n, 9n),
  INT8: () => Int8Array.of(-128, 127, 0, -1),
  INT16: () => Int16Array.of(-32768, 32767, 0, -1),
  INT32: () => Int32Array.of(-(2 ** 31), 2 ** 31 - 1, 0, -1),
  INT64: () => BigInt64Array.of(-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -1n),
  FP16: () => Uint16Array.of(0x3c00, 0x7c00, 0xfc00, 0x8001),
  FP32: () => Float32Array.of(1.5, -0, Infinity, 3.4e38),
  FP64: () => Float64Array.of(Math.PI, -0, -Infinity, 1e308),
  BYTES: () => [Buffer.from('a\0b'), Buffer.alloc(0), Buffer.from([0, 255, 0]), Buffer.from('é')],
  BF16: () => Uint16Array.of(0x3f80, 0xc000, 0x7f80, 0x0001),
};

describe('gRPC server: ModelInfer', () => {
  beforeEach(() => start());

  it.each(DATA_TYPES)('round-trips %s through raw_input_contents, echoing the id', async (dtype) => {
    const bytes = raw(SAMPLES[dtype]());
    const res = await client.call<ModelInferResponseMessage>('ModelInfer', {
      model_name: `identity_${dtype.toLowerCase()}`,
      id: `req-${dtype}`,
      inputs: [{ name: 'INPUT0', datatype: dtype, shape: [2, 2] }],
      raw_input_contents: [bytes],
    });
    expect(res.id).toBe(`req-${dtype}`);
    expect(res.model_name).toBe(`identity_${dtype.toLowerCase()}`);
    expect(res.model_version).toBe('1');
    expect(res.outputs).toEqual([{ name: 'OUTPUT0', datatype: dtype, shape: [2, 2], parameters: {}, contents: null }]);
    expect(res.raw_output_contents).toHaveLength(1);
    expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).equals(bytes)).toBe(true);
  });

  const TYPED: [DataType, string, unknown[], ArrayBufferView | Uint8Array[]][] = [
    ['BOOL', 'bool_contents', [true, false], Uint8Array.of(1, 0)],
    ['INT8', 'int_contents', [-5, 7], Int8Array.of(-5, 7)],
    ['INT32', 'int_contents', [-5, 2 ** 31 - 1], Int32Array.of(-5, 2 ** 31 - 1)],
    ['INT64', 'int64_contents', ['9007199254740993', '-3'], BigInt64Array.of(9007199254740993n, -3n)],
    ['UINT16', 'uint_contents', [65535, 1], Uint16Array.of(65535, 1)],
    ['UINT64', 'uint64_contents', ['18446744073709551615', '1'], BigUint64Array.of(2n ** 64n - 1n, 1n)],
    ['FP32', 'fp32_contents', [1.5, -2], Float32Array.of(1.5, -2)],
    ['FP64', 'fp64_contents', [Math.E, -2], Float64Array.of(Math.E, -2)],
    ['BYTES', 'bytes_contents', [Buffer.from('x\0y'), Buffer.from('')], [Buffer.from('x\0y'), Buffer.from('')]],
  ];

  it.each(TYPED)('decodes %s from typed contents.%s', async (dtype, field, values, expected) => {
    const res = await client.call<ModelInferResponseMessage>('ModelInfer', {
      model_name: `identity_${dtype.toLowerCase()}`,
      inputs: [{ name: 'INPUT0', datatype: dtype, shape: [1, 2], contents: { [field]: values } }],
    });
    expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).equals(raw(expected))).toBe(true);
  });

  it('returns one raw_output_contents entry per output, in order, and only the outputs asked for', async () => {
    const input = Int32Array.of(1, 2, 3);
    const both = await client.call<ModelInferResponseMessage>('ModelInfer', {
      model_name: 'two_outputs',
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 3] }],
      raw_input_contents: [raw(input)],
    });
    expect(both.outputs.map((o) => o.name)).toEqual(['A', 'B']);
    expect(both.raw_output_contents.map((b) => Buffer.from(b).equals(raw(input)))).toEqual([true, true]);
    const onlyB = await client.call<ModelInferResponseMessage>('ModelInfer', {
      model_name: 'two_outputs',
      inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 3] }],
      outputs: [{ name: 'B' }],
      raw_input_contents: [raw(input)],
    });
    expect(onlyB.outputs.map((o) => o.name)).toEqual(['B']);
    expect(onlyB.raw_output_contents).toHaveLength(1);
  });

  it('passes custom parameters to the callable and accepts triton_enable_empty_final_response', async () => {
    const res = await client.call<ModelInferResponseMessage>(
      'ModelInfer',
      fp32Request('echo_param', [1], {
        parameters: { tag: { string_param: 'hello' }, triton_enable_empty_final_response: { bool_param: true }, priority: { uint64_param: 0 } },
      }),
    );
    const bytes = Buffer.from(res.raw_output_contents[0] as Uint8Array);
    expect(bytes.subarray(4).toString()).toBe('hello');
  });

  it('accepts a 32 MiB input (no 4 MiB grpc-js default limit) and returns it intact', async () => {
    const values = new Float32Array(8 * 1024 * 1024);
    for (let i = 0; i < values.length; i += 4097) values[i] = i;
    const res = await client.call<ModelInferResponseMessage>('ModelInfer', {
      model_name: 'identity_fp32',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, values.length] }],
      raw_input_contents: [raw(values)],
    });
    expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).equals(raw(values))).toBe(true);
  });

  it('accepts gzip-compressed requests', async () => {
    const gz = new RawClient(triton.ports.grpc as number, { 'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip });
    try {
      const values = new Float32Array(4096).fill(3);
      const res = await gz.call<ModelInferResponseMessage>('ModelInfer', fp32Request('identity_fp32', [...values]));
      expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).equals(raw(values))).toBe(true);
    } finally {
      gz.close();
    }
  });
});

describe('gRPC server: errors carry Triton gRPC codes', () => {
  beforeEach(() => start());

  const cases: [string, () => object, number, RegExp][] = [
    ['unknown model', () => fp32Request('nope', [1]), grpc.status.INVALID_ARGUMENT, /^Request for unknown model: 'nope' is not found$/],
    ['unknown version (NOT_FOUND, as Triton)', () => fp32Request('identity_fp32', [1], { model_version: '7' }), grpc.status.NOT_FOUND, /^Request for unknown model: 'identity_fp32' version 7 is not found$/],
    [
      'wrong datatype',
      () => ({ model_name: 'identity_fp32', inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1] }], raw_input_contents: [raw(Int32Array.of(1))] }),
      grpc.status.INVALID_ARGUMENT,
      /data-type is 'INT32', but model 'identity_fp32' expects 'FP32'/,
    ],
    [
      'missing raw data',
      () => ({ model_name: 'identity_fp32', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1] }] }),
      grpc.status.INVALID_ARGUMENT,
      /unable to find data for input tensor 'INPUT0' for model 'identity_fp32' in request/,
    ],
    [
      'contents together with raw_input_contents',
      () => ({
        model_name: 'two_outputs',
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 1], contents: { int_contents: [1] } }],
        raw_input_contents: [raw(Int32Array.of(1))],
      }),
      grpc.status.INVALID_ARGUMENT,
      /contents field must not be specified when using raw_input_contents/,
    ],
    [
      'raw bytes of the wrong size',
      () => ({ model_name: 'identity_fp32', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2] }], raw_input_contents: [Buffer.alloc(4)] }),
      grpc.status.INVALID_ARGUMENT,
      /byte size mismatch.*Expected 8, got 4/,
    ],
    ['batch too large', () => fp32Request('identity_fp32', [1], { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [9, 0] }], raw_input_contents: [Buffer.alloc(0)] }), grpc.status.INVALID_ARGUMENT, /batch-size must be <= 8/],
    ['reserved triton_ parameter', () => fp32Request('identity_fp32', [1], { parameters: { triton_x: { bool_param: true } } }), grpc.status.INVALID_ARGUMENT, /reserved for Triton usage/],
    ['decoupled model', () => fp32Request('decoupled', [1]), grpc.status.UNIMPLEMENTED, /^ModelInfer RPC doesn't support models with decoupled transaction policy$/],
    ['model with no ready version', () => fp32Request('not_ready', [1]), grpc.status.NOT_FOUND, /^Request for unknown model: 'not_ready' has no available versions$/],
    ['version not at ready state', () => fp32Request('not_ready', [1], { model_version: '1' }), grpc.status.UNAVAILABLE, /^Request for unknown model: 'not_ready' version 1 is not at ready state$/],
    ['callable throws', () => fp32Request('fails', [1]), grpc.status.INTERNAL, /model exploded/],
    [
      'shared memory input from an unknown region',
      () =>
        fp32Request('identity_fp32', [1], {
          inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1], parameters: { shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: 4 } } }],
        }),
      grpc.status.NOT_FOUND,
      /Unable to find system shared memory region: 'r'/,
    ],
  ];

  it.each(cases)('%s', async (_name, request, code, message) => {
    const err = await rejection(client.call('ModelInfer', request()));
    expect(err.code).toBe(code);
    expect(err.details).toMatch(message);
  });

  it('answers UNAVAILABLE when the queue is full', async () => {
    const first = client.call('ModelInfer', fp32Request('hang', [1]));
    await gate.started;
    const queued = client.call('ModelInfer', fp32Request('hang', [2]));
    // The queue holds one request; wait until the second is in it before sending the third.
    await waitFor(() => triton.repository.get('hang').scheduler.pendingCount === 1);
    const err = await rejection(client.call('ModelInfer', fp32Request('hang', [3])));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toBe('Exceeds maximum queue size');
    gate.open();
    await Promise.all([first, queued]);
  });

  it('refuses messages over grpcMaxMessageSize with RESOURCE_EXHAUSTED', async () => {
    await triton.stop();
    client.close();
    await start({ grpcMaxMessageSize: 1024 });
    const err = await rejection(client.call('ModelInfer', fp32Request('identity_fp32', new Array(1024).fill(1))));
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});

/** Polls a condition that has no event (scheduler internals) on the next turns of the event loop. */
async function waitFor(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((r) => setImmediate(r));
}

describe('gRPC server: ModelStreamInfer', () => {
  beforeEach(() => start());

  function collect(stream: grpc.ClientDuplexStream<ModelInferRequestMessage, ModelStreamInferResponseMessage>): Promise<ModelStreamInferResponseMessage[]> {
    const out: ModelStreamInferResponseMessage[] = [];
    return new Promise((resolve, reject) => {
      stream.on('data', (m: ModelStreamInferResponseMessage) => out.push(m));
      stream.on('error', reject);
      stream.on('end', () => resolve(out));
    });
  }

  it('answers each request once, with triton_final_response, keeps going after an error, and ends after the client does', async () => {
    const stream = client.stream();
    const done = collect(stream);
    stream.write(fp32Request('identity_fp32', [1, 2], { id: 'a', parameters: { triton_enable_empty_final_response: { bool_param: true } } }));
    stream.write(fp32Request('nope', [1], { id: 'b' }));
    stream.write(fp32Request('identity_fp32', [3], { id: 'c' }));
    stream.end();
    const responses = await done;
    expect(responses).toHaveLength(3);
    const byId = new Map(responses.map((r) => [r.infer_response?.id, r]));
    const a = byId.get('a') as ModelStreamInferResponseMessage;
    expect(a.error_message).toBe('');
    expect(a.infer_response?.parameters).toEqual({ triton_final_response: { bool_param: true } });
    expect(Buffer.from(a.infer_response?.raw_output_contents[0] as Uint8Array).equals(raw(Float32Array.of(1, 2)))).toBe(true);
    expect(byId.get('b')?.error_message).toBe("Request for unknown model: 'nope' is not found");
    expect(byId.get('b')?.infer_response?.parameters).toEqual({ triton_final_response: { bool_param: true } });
    expect(byId.get('c')?.error_message).toBe('');
  });

  it('aborts the requests still running when the client cancels the stream', async () => {
    const stream = client.stream();
    stream.on('error', () => undefined);
    stream.write(fp32Request('hang', [1], { id: 'x' }));
    await gate.started;
    stream.cancel();
    await expect(gate.aborted).resolves.toBeInstanceOf(TritonError);
  });
});

describe('gRPC server: cancellation and deadlines', () => {
  beforeEach(() => start());

  it('aborts the request signal when the client cancels', async () => {
    const pending = client.call('ModelInfer', fp32Request('hang', [1]));
    await gate.started;
    pending.call?.cancel();
    const err = await rejection(pending);
    expect(err.code).toBe(grpc.status.CANCELLED);
    const reason = await gate.aborted;
    expect((reason as TritonError).code).toBe('CANCELLED');
  });

  it('aborts the request signal when the deadline passes', async () => {
    const err = await rejection(client.call('ModelInfer', fp32Request('hang', [1]), { deadline: Date.now() + 200 }));
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await expect(gate.aborted).resolves.toBeDefined();
  });
});

describe('gRPC health and shutdown', () => {
  it('answers SERVING when ready and NOT_SERVING when a model is not ready (strict readiness)', async () => {
    await start({ strictReadiness: true });
    expect(await client.health()).toEqual({ status: 'NOT_SERVING' });
    triton.repository.find('not_ready').state = 'READY';
    expect(await client.health()).toEqual({ status: 'SERVING' });
  });

  it('turns NOT_SERVING and refuses new inference while draining, and lets in-flight calls finish', async () => {
    await start();
    expect(await client.health()).toEqual({ status: 'SERVING' });
    const inFlight = client.call<ModelInferResponseMessage>('ModelInfer', fp32Request('hang', [4, 5]));
    await gate.started;
    const stopped = triton.stop();
    expect(await client.health()).toEqual({ status: 'NOT_SERVING' });
    expect(await client.call('ServerReady', {})).toEqual({ ready: false });
    const refused = await rejection(client.call('ModelInfer', fp32Request('identity_fp32', [1])));
    expect(refused.code).toBe(grpc.status.UNAVAILABLE);
    expect(refused.details).toMatch(/stopping/);
    gate.open();
    const res = await inFlight;
    expect(Buffer.from(res.raw_output_contents[0] as Uint8Array).equals(raw(Float32Array.of(4, 5)))).toBe(true);
    await stopped;
  });

  it('fails calls still running at the exit timeout with UNAVAILABLE and aborts their work', async () => {
    await start({ exitTimeoutSeconds: 0.2 });
    const inFlight = client.call('ModelInfer', fp32Request('hang', [1]));
    await gate.started;
    // stop() resolves once the transports have closed, by when the call has failed: watch it from now.
    const failed = rejection(inFlight);
    await triton.stop();
    const err = await failed;
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    await expect(gate.aborted).resolves.toBeDefined();
  });

  it('keeps a stream open while draining: running requests answer, new ones get error_message after them (request order), then the stream ends UNAVAILABLE', async () => {
    await start();
    // Resolves once the core's entry has refused a request: the stream has read 'late' and holds its answer.
    const entry = triton.inferAsync.bind(triton);
    const refused = new Promise<void>((resolve) =>
      jest.spyOn(triton, 'inferAsync').mockImplementation((call, sink) => {
        const run = entry(call, sink);
        run.catch(() => resolve());
        return run;
      }),
    );
    const stream = client.stream();
    const responses: ModelStreamInferResponseMessage[] = [];
    stream.on('data', (m: ModelStreamInferResponseMessage) => responses.push(m));
    const ended = new Promise<grpc.ServiceError>((resolve) => stream.on('error', resolve));
    stream.write(fp32Request('hang', [7], { id: 'running' }));
    await gate.started;
    const stopped = triton.stop();
    stream.write(fp32Request('identity_fp32', [1], { id: 'late' }));
    await refused;
    gate.open();
    await stopped;
    const err = await ended;
    expect(responses).toMatchObject([
      { error_message: '', infer_response: { id: 'running' } },
      { error_message: expect.stringMatching(/stopping/), infer_response: { id: 'late' } },
    ]);
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
  });

  it('does not start the gRPC transport when allowGrpc is false', async () => {
    triton = loopbackTriton({ ...BASE, allowGrpc: false });
    await triton.run();
    expect(triton.ports.grpc).toBeUndefined();
  });
});

it('every datatype of the table has a sample', () => {
  expect(Object.keys(SAMPLES).sort()).toEqual(Object.keys(DTYPES).sort());
});
