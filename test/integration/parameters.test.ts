import type { Triton, ParameterValue, Tensor } from '../../lib';
import { ModelClient } from '../../lib/client';
import { batch } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

describe('request parameters and forwarded headers', () => {
  let triton: Triton;
  const seen: Record<string, ParameterValue>[][] = [];

  beforeAll(async () => {
    triton = loopbackTriton({
      allowGrpc: true,
      httpHeaderForwardPattern: 'x-tenant|x-trace-.*',
      grpcHeaderForwardPattern: 'x-tenant',
    });
    triton.bind({
      modelName: 'params',
      // Parameters reach the function through @batch, per request.
      inferFunc: batch(async ({ x }: Record<string, Tensor>, ctx) => {
        seen.push(ctx.requests.map((r) => ({ ...r.parameters })));
        return { y: x! };
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 4 },
    });
    await triton.run();
  });

  afterAll(async () => {
    await triton.stop();
  });

  const body = (parameters?: Record<string, unknown>) =>
    JSON.stringify({ parameters, inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] }] });

  it('custom parameters of every type and matching HTTP headers reach the callable', async () => {
    const res = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/params/infer`, {
      method: 'POST',
      // 2^53 + 1 as a JSON literal: JS numbers cannot hold it, the server keeps it exact.
      body: body({ s: 'text', i: 42, b: true, d: 0.5, big: 'BIG' }).replace('"BIG"', '9007199254740993'),
      headers: { 'X-Tenant': 'acme', 'X-Trace-Id': 't-1', 'X-Other': 'not forwarded' },
    });
    expect(res.status).toBe(200);
    expect(seen.at(-1)).toEqual([{ s: 'text', i: 42, b: true, d: 0.5, big: 9007199254740993n, 'x-tenant': 'acme', 'x-trace-id': 't-1' }]);
  });

  it('refuses reserved triton_ keys and other JSON types', async () => {
    for (const [parameters, message] of [
      [{ triton_x: 1 }, /reserved for Triton usage/],
      [{ o: { nested: 1 } }, /parameter 'o' has an invalid type/],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/params/infer`, { method: 'POST', body: body(parameters) });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(message);
    }
  });

  it('gRPC parameters and matching metadata reach the callable', async () => {
    const client = new ModelClient(`grpc://127.0.0.1:${triton.ports.grpc}`, 'params');
    try {
      await client.inferBatch({ x: { dtype: 'FP32', shape: [1, 1], data: new Float32Array([1]) } }, { parameters: { k: 'v', n: 3 }, headers: { 'x-tenant': 'globex' } });
      expect(seen.at(-1)).toEqual([{ k: 'v', n: 3, 'x-tenant': 'globex' }]);
    } finally {
      client.close();
    }
  });
});
