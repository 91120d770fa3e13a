import { RESPONSE_PARAMETERS, type Triton, tensor, withParameters, workers, type Tensor } from '../../lib';
import { ModelClient, parametersOf } from '../../lib/client';
import { batch, sample } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

const PARAMETERS_WORKER = require.resolve('../fixtures/workers/parameters-model.js');

describe('response parameters', () => {
  let triton: Triton;

  beforeAll(async () => {
    triton = loopbackTriton({ allowGrpc: true });
    const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [1] }] };
    triton.bind({
      modelName: 'batched',
      // One object for the whole batch, and one per request, through @batch.
      inferFunc: batch(async ({ x }: Record<string, Tensor>, ctx) => ({
        y: x!,
        [RESPONSE_PARAMETERS]: ctx.rows.map((rows, i) => ({ rows, request: ctx.requests[i]!.id, tokens: 7 })),
      })),
      ...io,
      config: { maxBatchSize: 8 },
    });
    triton.bind({
      modelName: 'raw',
      inferFunc: async (requests) => requests.map((r) => withParameters({ y: r.inputs.x! }, { where: 'main', big: -9007199254740993n })),
      ...io,
      config: { maxBatchSize: 8 },
    });
    triton.bind({ modelName: 'in_worker', inferFunc: workers({ module: PARAMETERS_WORKER, devices: ['cpu'] }), ...io, config: { maxBatchSize: 8 } });
    triton.bind({
      modelName: 'streamed',
      inferFunc: sample(async function* (inputs: Record<string, Tensor>) {
        const n = (inputs.x as Tensor<'FP32'>).data[0] ?? 0;
        for (let i = 0; i < n; i++) yield { y: tensor('FP32', [1], new Float32Array([i])), [RESPONSE_PARAMETERS]: { index: i, last: i === n - 1 } };
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    triton.bind({
      modelName: 'bad_parameters',
      inferFunc: async (requests) => requests.map((r) => ({ y: r.inputs.x!, [RESPONSE_PARAMETERS]: { nested: { no: 1 } } }) as never),
      ...io,
      config: { maxBatchSize: 8 },
    });
    await triton.run();
  });

  afterAll(async () => {
    await triton.stop();
  });

  const x = { x: { dtype: 'FP32' as const, shape: [1], data: new Float32Array([3]) } };

  it('appear in the HTTP JSON `parameters` of the response', async () => {
    const res = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/raw/infer`, {
      method: 'POST',
      body: JSON.stringify({ id: 'r1', inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] }] }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    // 64-bit integers are written exactly, as JSON integers.
    expect(text).toContain('"parameters":{"where":"main","big":-9007199254740993}');
    expect(JSON.parse(text)).toMatchObject({ id: 'r1', model_name: 'raw', outputs: [{ name: 'y', data: [1] }] });
  });

  it('refuses parameters that are not strings, integers, booleans or doubles', async () => {
    const client = new ModelClient(`http://127.0.0.1:${triton.ports.http}`, 'bad_parameters');
    try {
      await expect(client.inferSample(x)).rejects.toThrow(/response parameter 'nested' must be a string, integer, boolean or double/);
    } finally {
      client.close();
    }
  });

  for (const protocol of ['http', 'grpc'] as const) {
    const url = () => `${protocol}://127.0.0.1:${protocol === 'http' ? triton.ports.http : triton.ports.grpc}`;

    it(`reach the TypeScript client over ${protocol} from @batch, a raw callable and a worker instance`, async () => {
      const clients = ['batched', 'raw', 'in_worker'].map((m) => new ModelClient(url(), m));
      try {
        const [batched, raw, inWorker] = clients as [ModelClient, ModelClient, ModelClient];
        expect(parametersOf(await batched.inferSample(x, { id: 'b1' }))).toEqual({ rows: 1, request: 'b1', tokens: 7 });
        const two = await batched.inferBatch({ x: { dtype: 'FP32', shape: [2, 1], data: new Float32Array([1, 2]) } }, { id: 'b2' });
        expect(parametersOf(two)).toEqual({ rows: 2, request: 'b2', tokens: 7 });
        // Beyond 2^53 the gRPC client reads 64-bit integers as numbers (the HTTP test above checks the exact value).
        expect(parametersOf(await raw.inferSample(x))).toMatchObject({ where: 'main' });
        // A BigInt that fits a double reads back as a number.
        expect(parametersOf(await inWorker.inferSample(x, { id: 'w1' }))).toEqual({ rows: 1, where: 'worker', id: 'w1', exact: true, ratio: 0.25, big: 2 ** 40 });
      } finally {
        for (const c of clients) c.close();
      }
    });
  }

  it('ride on every streamed gRPC response', async () => {
    const client = new ModelClient(`grpc://127.0.0.1:${triton.ports.grpc}`, 'streamed');
    try {
      const seen = [];
      for await (const r of client.stream(x)) seen.push(r.parameters);
      expect(seen).toEqual([
        { index: 0, last: false },
        { index: 1, last: false },
        { index: 2, last: true },
      ]);
    } finally {
      client.close();
    }
  });
});
