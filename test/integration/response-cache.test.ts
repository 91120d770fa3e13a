import * as path from 'node:path';
import { type Triton, TritonConfig, TritonError, workers, type Request, type Response } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

const ECHO = path.join(__dirname, '../fixtures/workers/echo-model.js');

/** Reads one sample's value from Prometheus text. */
function sample(text: string, name: string, labels = ''): number {
  const line = text.split('\n').find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && labels.split(',').every((kv) => l.includes(kv)));
  if (!line) throw new Error(`no sample ${name}{${labels}} in:\n${text}`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

interface Stats {
  inference_count: number;
  execution_count: number;
  inference_stats: Record<'success' | 'queue' | 'compute_infer' | 'cache_hit' | 'cache_miss', { count: number; ns: number }>;
}

describe('response cache', () => {
  let triton: Triton;
  let base: string;
  /** Requests each callable ran. */
  let ran: string[];

  const double = async (rs: Request[]): Promise<Response[]> =>
    rs.map((r) => {
      ran.push(r.id);
      const x = r.inputs.x!.data as Float32Array;
      return { y: { dtype: 'FP32', shape: r.inputs.x!.shape, data: x.map((v) => v * 2) }, z: { dtype: 'FP32', shape: r.inputs.x!.shape, data: x.map((v) => -v) } };
    });

  beforeEach(async () => {
    ran = [];
    triton = loopbackTriton({ allowMetrics: true, responseCacheByteSize: 1 << 20 });
    const io = { inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }, { name: 'z', dtype: 'FP32', shape: [-1] }] } as const;
    triton.bind({ modelName: 'cached', inferFunc: double, ...io, config: { maxBatchSize: 8, responseCache: true } });
    triton.bind({ modelName: 'uncached', inferFunc: double, ...io, config: { maxBatchSize: 8 } });
    triton.bind({
      modelName: 'cached_worker',
      inferFunc: workers({ module: ECHO, devices: ['cpu'] }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
      config: { batching: false, responseCache: true },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  afterEach(async () => {
    await triton.stop();
  });

  const infer = async (model: string, id: string, data: number[], extra: Record<string, unknown> = {}) => {
    const shape = model === 'cached_worker' ? [data.length] : [1, data.length];
    const res = await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify({ id, inputs: [{ name: 'x', datatype: 'FP32', shape, data }], ...extra }) });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string; outputs: { name: string; data: number[] }[] };
  };
  const stats = async (model: string) => ((await (await fetch(`${base}/v2/models/${model}/stats`)).json()) as { model_stats: Stats[] }).model_stats[0]!;

  it('answers a repeated request from the cache without running the model, with its own id', async () => {
    const first = await infer('cached', 'a', [1, 2, 3]);
    const second = await infer('cached', 'b', [1, 2, 3]);
    expect(ran).toEqual(['a']);
    expect(second.id).toBe('b');
    expect(second.outputs).toEqual(first.outputs);
    expect(second.outputs.find((o) => o.name === 'y')!.data).toEqual([2, 4, 6]);

    await infer('cached', 'c', [1, 2, 4]); // other data: a miss
    expect(ran).toEqual(['a', 'c']);

    const s = await stats('cached');
    expect(s.inference_stats.cache_hit.count).toBe(1);
    expect(s.inference_stats.cache_miss.count).toBe(2);
    expect(s.inference_stats.cache_hit.ns).toBeGreaterThan(0);
    expect(s.inference_stats.success.count).toBe(3);
    expect(s.inference_stats.queue.count).toBe(3);
    expect(s.inference_stats.compute_infer.count).toBe(2);
    expect([s.inference_count, s.execution_count]).toEqual([2, 2]);

    const metrics = await (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
    expect(sample(metrics, 'nv_cache_num_hits_per_model', 'model="cached"')).toBe(1);
    expect(sample(metrics, 'nv_cache_num_misses_per_model', 'model="cached"')).toBe(2);
    expect(sample(metrics, 'nv_cache_num_hits_per_model', 'model="uncached"')).toBe(0);
    expect(sample(metrics, 'nv_inference_request_success', 'model="cached"')).toBe(3);
    expect(sample(metrics, 'nv_inference_count', 'model="cached"')).toBe(2);
    expect(sample(metrics, 'nv_cache_num_entries')).toBe(2);
    expect(sample(metrics, 'nv_cache_util')).toBeGreaterThan(0);
  });

  it('keys on the requested outputs and the parameters', async () => {
    await infer('cached', 'all', [5]);
    const onlyZ = await infer('cached', 'z', [5], { outputs: [{ name: 'z' }] });
    expect(onlyZ.outputs.map((o) => o.name)).toEqual(['z']);
    await infer('cached', 'param', [5], { parameters: { scale: 2 } });
    await infer('cached', 'again', [5], { parameters: { scale: 2 } });
    expect(ran).toEqual(['all', 'z', 'param']);
  });

  it('leaves models without responseCache alone', async () => {
    await infer('uncached', 'a', [1]);
    await infer('uncached', 'b', [1]);
    expect(ran).toEqual(['a', 'b']);
    const s = await stats('uncached');
    expect([s.inference_stats.cache_hit.count, s.inference_stats.cache_miss.count]).toEqual([0, 0]);
  });

  it('works for worker instances too', async () => {
    const first = await infer('cached_worker', 'a', [3, 4]);
    const second = await infer('cached_worker', 'b', [3, 4]);
    expect(second.outputs).toEqual(first.outputs);
    const s = await stats('cached_worker');
    expect([s.inference_stats.cache_hit.count, s.inference_stats.cache_miss.count, s.execution_count]).toEqual([1, 1, 1]);
  });

  it('does not cache failures', async () => {
    const failing = loopbackTriton({ allowMetrics: true, responseCacheByteSize: 1 << 20 });
    let calls = 0;
    failing.bind({
      modelName: 'flaky',
      inferFunc: async (rs: Request[]) => {
        calls++;
        if (calls === 1) throw new TritonError('INFERENCE_FAILED', 'first call fails');
        return rs.map((r) => ({ y: r.inputs.x! }));
      },
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8, responseCache: true },
    });
    await failing.run();
    try {
      const send = () =>
        fetch(`http://127.0.0.1:${failing.ports.http}/v2/models/flaky/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] }] }) });
      expect((await send()).status).toBe(500);
      expect((await send()).status).toBe(200);
      expect((await send()).status).toBe(200);
      expect(calls).toBe(2);
    } finally {
      await failing.stop();
    }
  });
});

describe('response cache configuration', () => {
  const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };
  const echo = async (rs: Request[]) => rs.map((r) => ({ y: r.inputs.x! }));

  it('refuses a model that enables it on a server without a cache, naming the setting', () => {
    const triton = loopbackTriton({ allowMetrics: true });
    expect(() => triton.bind({ modelName: 'm', inferFunc: echo, ...io, config: { responseCache: true } })).toThrow(/responseCacheByteSize/);
  });

  it('refuses a decoupled model', () => {
    const triton = loopbackTriton({ allowMetrics: true, responseCacheByteSize: 1024 });
    expect(() => triton.bind({ modelName: 'm', inferFunc: echo, ...io, config: { responseCache: true, decoupled: true } })).toThrow(/decoupled models cannot use the response cache/);
  });

  it('takes its size from TSTRITON_RESPONSE_CACHE_BYTE_SIZE and rejects a negative one', () => {
    expect(TritonConfig.fromEnv({ TSTRITON_RESPONSE_CACHE_BYTE_SIZE: '4096' }).responseCacheByteSize).toBe(4096);
    expect(() => loopbackTriton({ allowMetrics: true, responseCacheByteSize: -1 })).toThrow(/responseCacheByteSize/);
  });
});
