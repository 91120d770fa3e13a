import { type Triton, TritonError, type Request, type Response } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

const body = (id: string, rows = 1) =>
  JSON.stringify({ id, inputs: [{ name: 'x', datatype: 'FP32', shape: [rows, 2], data: Array(rows * 2).fill(1) }] });

function server(inferFunc: (rs: Request[]) => Promise<Response[]>, warmup: never[] | object[] = []): Triton {
  const triton = loopbackTriton({ allowMetrics: true });
  triton.bind({
    modelName: 'm',
    inferFunc,
    inputs: [{ name: 'x', dtype: 'FP32', shape: [2] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [2] }],
    config: { maxBatchSize: 8, warmup: warmup as never[] },
  });
  return triton;
}

const echo = async (rs: Request[]) => rs.map((r) => {
  if (r.id.startsWith('fail')) throw new TritonError('INFERENCE_FAILED', 'asked to fail');
  return { y: r.inputs.x! };
});

/** Reads one sample's value from Prometheus text. */
function sample(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  if (!line) throw new Error(`no sample ${name}{${labels}} in:\n${text}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('statistics and metrics', () => {
  let triton: Triton;
  afterEach(async () => {
    await triton.stop();
  });

  it('count successes, failures, inferences and executions, in the stats API and on the metrics port', async () => {
    triton = server(echo);
    await triton.run();
    const url = `http://127.0.0.1:${triton.ports.http}/v2/models/m/infer`;
    for (let i = 0; i < 5; i++) expect((await fetch(url, { method: 'POST', body: body(`ok${i}`, 2) })).status).toBe(200);
    for (let i = 0; i < 2; i++) expect((await fetch(url, { method: 'POST', body: body(`fail${i}`) })).status).toBe(500);

    const stats = (await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/m/stats`)).json()) as {
      model_stats: { name: string; version: string; inference_count: number; execution_count: number; inference_stats: Record<string, { count: number; ns: number }>; batch_stats: { batch_size: number }[] }[];
    };
    const s = stats.model_stats[0]!;
    expect([s.name, s.version]).toEqual(['m', '1']);
    expect(s.inference_stats.success!.count).toBe(5);
    expect(s.inference_stats.queue!.count).toBe(5);
    expect(s.inference_stats.fail!.count).toBe(2);
    expect([s.inference_stats.compute_input!.count, s.inference_stats.compute_infer!.count, s.inference_stats.compute_output!.count]).toEqual([5, 5, 5]);
    expect(s.inference_count).toBe(10);
    expect(s.execution_count).toBe(5);
    expect(s.batch_stats.map((b) => b.batch_size)).toEqual([2]);

    const all = (await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/stats`)).json()) as { model_stats: unknown[] };
    expect(all.model_stats).toHaveLength(1);

    const text = await (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
    expect(sample(text, 'nv_inference_request_success', 'model="m",version="1"')).toBe(5);
    expect(sample(text, 'nv_inference_request_failure', 'model="m",reason="BACKEND"')).toBe(2);
    expect(sample(text, 'nv_inference_request_failure', 'model="m",reason="REJECTED"')).toBe(0);
    expect(sample(text, 'nv_inference_count', 'model="m"')).toBe(10);
    expect(sample(text, 'nv_inference_exec_count', 'model="m"')).toBe(5);
    expect(sample(text, 'nv_inference_pending_request_count', 'model="m"')).toBe(0);
    expect(sample(text, 'tstriton_batch_size_count', 'model="m"')).toBe(5);
    expect(sample(text, 'nv_inference_compute_infer_duration_us', 'model="m"')).toBeGreaterThanOrEqual(0);
    expect(text).toContain('# TYPE nv_inference_request_success counter');
  });

  it('lets callables register their own metrics', async () => {
    triton = server(echo);
    const { Counter } = await import('prom-client');
    const mine = new Counter({ name: 'my_tokens_total', help: 'Tokens produced.', registers: [triton.metrics.registry] });
    mine.inc(7);
    await triton.run();
    const text = await (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
    expect(text).toContain('my_tokens_total 7');
  });

  it('runs warmup before turning ready and does not count it', async () => {
    let calls = 0;
    triton = server(async (rs) => {
      calls++;
      return echo(rs);
    }, [{ name: 'w', batchSize: 4, count: 3, inputs: { x: { dtype: 'FP32', dims: [2], data: 'random' } } }]);
    await triton.run();
    expect(calls).toBe(3);
    const model = triton.repository.get('m');
    expect(model.ready).toBe(true);
    expect(model.statistics.executionCount).toBe(0);
    expect(model.statistics.success.count).toBe(0);
  });

  it('a failing warmup fails the load with the reason', async () => {
    triton = server(async () => {
      throw new Error('weights missing');
    }, [{ name: 'w', inputs: { x: { dtype: 'FP32', dims: [2] } } }]);
    await expect(triton.run()).rejects.toThrow("failed to load model 'm': weights missing");
    expect(triton.repository.find('m').state).toBe('UNAVAILABLE');
  });
});
