import { type Triton, workers, type Tensor } from '../../lib';
import { ModelClient } from '../../lib/client';
import { batch } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

const CUSTOM_WORKER = require.resolve('../fixtures/workers/custom-metrics-model.js');

/** The value of the one sample `name{labels}` in Prometheus text (labels in any order). */
function value(text: string, name: string, labels: Record<string, string>): number | undefined {
  const lines = text.split('\n').filter((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  if (lines.length > 1) throw new Error(`several samples ${name}${JSON.stringify(labels)}`);
  return lines[0] === undefined ? undefined : Number(lines[0].slice(lines[0].lastIndexOf(' ') + 1));
}

describe('custom metrics', () => {
  let triton: Triton;

  beforeAll(async () => {
    triton = loopbackTriton({ allowMetrics: true, allowCpuMetrics: false });
    const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [1] }] };
    triton.bind({ modelName: 'in_worker', inferFunc: workers({ module: CUSTOM_WORKER, devices: ['cpu'] }), ...io, config: { maxBatchSize: 8 } });
    triton.bind({
      modelName: 'in_process',
      // The same API on the main thread, through @batch's context.
      inferFunc: batch(async ({ x }: Record<string, Tensor>, ctx) => {
        ctx.instance!.metrics!.family({ name: 'demo_rows_total', description: 'Rows seen by the callable', kind: 'counter', labels: ['route'] }).metric({ route: 'main' }).increment(ctx.rows.reduce((a, b) => a + b, 0));
        return { y: x! };
      }),
      ...io,
      config: { maxBatchSize: 8 },
    });
    await triton.run();
  });

  afterAll(async () => {
    await triton.stop();
  });

  const scrape = async () => (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();

  it("a worker instance's counter, histogram and gauge appear with the model's labels, with the values it recorded", async () => {
    const client = new ModelClient(`http://127.0.0.1:${triton.ports.http}`, 'in_worker');
    try {
      for (const [v, route] of [[0.5, 'a'], [5, 'a'], [50, 'b'], [500, 'a']] as const) await client.inferSample({ x: new Float32Array([v]) }, { parameters: { route } });
      await client.inferBatch({ x: { dtype: 'FP32', shape: [3, 1], data: new Float32Array([2, 2, 2]) } }, { parameters: { route: 'b' } });
    } finally {
      client.close();
    }
    // Updates travel before the batch's result, so they are applied by the time the client has its answer.
    const text = await scrape();
    const m = { model: 'in_worker', version: '1' };
    expect(value(text, 'demo_rows_total', { ...m, route: 'a' })).toBe(3);
    expect(value(text, 'demo_rows_total', { ...m, route: 'b' })).toBe(4);
    expect(value(text, 'demo_value_count', m)).toBe(5);
    expect(value(text, 'demo_value_sum', m)).toBe(0.5 + 5 + 50 + 500 + 2);
    expect(value(text, 'demo_value_bucket', { ...m, le: '1' })).toBe(1);
    expect(value(text, 'demo_value_bucket', { ...m, le: '10' })).toBe(3);
    expect(value(text, 'demo_value_bucket', { ...m, le: '100' })).toBe(4);
    expect(value(text, 'demo_value_bucket', { ...m, le: '+Inf' })).toBe(5);
    expect(value(text, 'demo_last_batch', m)).toBe(1);
    expect(text).toContain('# TYPE demo_rows_total counter');
    expect(text).toContain('# HELP demo_value First value of each request');
  });

  it('the same family from an in-process callable is aggregated on the same registry under its own model', async () => {
    const client = new ModelClient(`http://127.0.0.1:${triton.ports.http}`, 'in_process');
    try {
      await client.inferBatch({ x: { dtype: 'FP32', shape: [2, 1], data: new Float32Array([1, 2]) } });
    } finally {
      client.close();
    }
    expect(value(await scrape(), 'demo_rows_total', { model: 'in_process', version: '1', route: 'main' })).toBe(2);
  });

  it('a bad update fails in the callable that made it, in a worker too', async () => {
    const client = new ModelClient(`http://127.0.0.1:${triton.ports.http}`, 'in_worker');
    try {
      await expect(client.inferSample({ x: new Float32Array([1]) }, { parameters: { bad: true } })).rejects.toThrow(/custom metric 'demo_rows_total': a counter cannot decrease/);
    } finally {
      client.close();
    }
  });
});

