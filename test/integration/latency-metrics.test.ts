import { Triton, tensor, type Tensor } from '../../lib';
import { ModelClient } from '../../lib/client';
import { batch, sample as perSample } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

/** Every sample of one family in Prometheus text, as `{ labels, value }`. */
function samples(text: string, name: string): { labels: Record<string, string>; value: number }[] {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)\{([^}]*)\} (\S+)$/.exec(line) ?? /^([a-z_:]+) (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const labels: Record<string, string> = {};
    if (m.length === 4) for (const kv of (m[2] as string).matchAll(/(\w+)="([^"]*)"/g)) labels[kv[1] as string] = kv[2] as string;
    out.push({ labels, value: Number(m[m.length - 1]) });
  }
  return out;
}

function one(text: string, name: string, match: Record<string, string>): number {
  const found = samples(text, name).filter((s) => Object.entries(match).every(([k, v]) => s.labels[k] === v));
  if (found.length !== 1) throw new Error(`expected one ${name}${JSON.stringify(match)}, found ${found.length} in:\n${text}`);
  return (found[0] as { value: number }).value;
}

describe('latency, CPU and batch metrics', () => {
  let triton: Triton;
  afterEach(async () => {
    await triton.stop();
  });

  it('summaries agree with the statistics, quantiles lie within the client latency, decoupled models get a first-response histogram', async () => {
    triton = loopbackTriton({
      allowGrpc: true,
      allowMetrics: true,
      metricsConfig: 'summary_latencies=true;histogram_latencies=true;summary_quantiles=0.5:0.05,0.9:0.01,0.99:0.001',
    });
    triton.bind({
      modelName: 'echo',
      inferFunc: batch(async ({ x }: Record<string, Tensor>) => {
        if ((x as Tensor<'FP32'>).data[0] === -1) throw new Error('asked to fail');
        return { y: x! };
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 8 },
    });
    triton.bind({
      modelName: 'words',
      inferFunc: perSample(async function* () {
        for (let i = 0; i < 3; i++) yield { y: tensor('FP32', [1], new Float32Array([i])) };
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    await triton.run();
    const client = new ModelClient(`http://127.0.0.1:${triton.ports.http}`, 'echo');
    const streams = new ModelClient(`grpc://127.0.0.1:${triton.ports.grpc}`, 'words');
    let slowestUs = 0;
    try {
      await client.waitForModel();
      for (let i = 0; i < 20; i++) {
        const start = performance.now();
        await client.inferSample({ x: new Float32Array([i]) });
        slowestUs = Math.max(slowestUs, (performance.now() - start) * 1000);
      }
      await expect(client.inferSample({ x: new Float32Array([-1]) })).rejects.toThrow(/asked to fail/);
      for (let i = 0; i < 4; i++) for await (const _ of streams.stream({ x: new Float32Array([1]) })) void _;
    } finally {
      client.close();
      streams.close();
    }
    const text = await (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
    const echo = { model: 'echo', version: '1' };
    const stats = triton.repository.get('echo')!.statistics;

    // Counts: the request summary sees every request (failed ones too), as the request-duration counter does.
    expect(one(text, 'nv_inference_request_summary_us_count', echo)).toBe(stats.success.count + stats.fail.count);
    expect(one(text, 'nv_inference_request_summary_us_count', echo)).toBe(21);
    for (const family of ['queue', 'compute_input', 'compute_infer', 'compute_output']) {
      expect(one(text, `nv_inference_${family}_summary_us_count`, echo)).toBe(20);
    }
    // Sums: the summaries' microseconds are the statistics' nanoseconds.
    expect(one(text, 'nv_inference_queue_summary_us_sum', echo)).toBeCloseTo(stats.queue.ns / 1000, 0);
    expect(one(text, 'nv_inference_compute_infer_summary_us_sum', echo)).toBeCloseTo(stats.computeInfer.ns / 1000, 0);
    // Quantiles, as configured; every one lies within what a client measured around the whole request.
    const quantiles = samples(text, 'nv_inference_request_summary_us').filter((s) => s.labels.model === 'echo');
    expect(quantiles.map((s) => s.labels.quantile)).toEqual(['0.5', '0.9', '0.99']);
    for (const q of quantiles) {
      expect(q.value).toBeGreaterThan(0);
      expect(q.value).toBeLessThanOrEqual(slowestUs);
    }

    // The first-response histogram: decoupled models only, one observation per request, in milliseconds.
    const words = { model: 'words', version: '1' };
    expect(one(text, 'nv_inference_first_response_histogram_ms_count', words)).toBe(4);
    expect(one(text, 'nv_inference_first_response_histogram_ms_bucket', { ...words, le: '+Inf' })).toBe(4);
    expect(samples(text, 'nv_inference_first_response_histogram_ms_count').filter((s) => s.labels.model === 'echo')).toEqual([]);

    // Pending requests, rows per execution, and the CPU.
    expect(one(text, 'nv_inference_pending_request_count', echo)).toBe(0);
    expect(one(text, 'tstriton_batch_size_count', echo)).toBe(stats.executionCount);
    expect(one(text, 'tstriton_batch_size_bucket', { ...echo, le: '1' })).toBe(20);
    const cpu = one(text, 'nv_cpu_utilization', {});
    expect(cpu).toBeGreaterThanOrEqual(0);
    expect(cpu).toBeLessThanOrEqual(1);
    const total = one(text, 'nv_cpu_memory_total_bytes', {});
    const used = one(text, 'nv_cpu_memory_used_bytes', {});
    expect(total).toBeGreaterThan(0);
    expect(used).toBeGreaterThan(0);
    expect(used).toBeLessThanOrEqual(total);
  });

  it('keeps summaries off by default, as Triton; counter_latencies=false drops the duration counters', async () => {
    triton = loopbackTriton({ allowMetrics: true, metricsConfig: 'counter_latencies=false', allowCpuMetrics: false });
    triton.bind({ modelName: 'm', inferFunc: async (rs) => rs.map((r) => ({ y: r.inputs.x! })), inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }], outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }] });
    await triton.run();
    expect(triton.repository.get('m')!.statistics.observer).toBeUndefined();
    const text = await (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
    expect(text).not.toMatch(/_summary_us|nv_inference_request_duration_us|nv_cpu_utilization/);
    expect(text).toMatch(/nv_inference_request_success/);
  });

  it('refuses an unknown metrics config key at construction', () => {
    expect(() => new Triton({ metricsConfig: 'summary_latency=true', logLevel: 'silent' })).toThrow(/unknown metrics config 'summary_latency'/);
  });
});

describe('GPU metrics', () => {
  const NVIDIA_SMI = require.resolve('../fixtures/metrics/nvidia-smi-h200.sh');
  let triton: Triton;
  afterEach(async () => {
    await triton.stop();
  });

  const start = async (init: { nvidiaSmiPath?: string; allowGpuMetrics?: boolean }) => {
    triton = loopbackTriton({ allowMetrics: true, ...init });
    await triton.run();
    return (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
  };

  it("are served per GPU with Triton's gpu_uuid label from the configured nvidia-smi (captured H200 output)", async () => {
    const text = await start({ nvidiaSmiPath: NVIDIA_SMI });
    const gpu = { gpu_uuid: 'GPU-b0b80e69-7e3d-4f06-ab55-4a366e8e2ca7' };
    expect(one(text, 'nv_gpu_utilization', gpu)).toBe(0);
    expect(one(text, 'nv_gpu_memory_total_bytes', gpu)).toBe(143771 * 1048576);
    expect(one(text, 'nv_gpu_memory_used_bytes', gpu)).toBe(0);
    expect(one(text, 'nv_gpu_power_usage', gpu)).toBe(75.79);
    expect(one(text, 'nv_gpu_power_limit', gpu)).toBe(700);
  });

  it('are absent without a GPU (no nvidia-smi) and with allowGpuMetrics false', async () => {
    expect(await start({ nvidiaSmiPath: '/nonexistent/nvidia-smi' })).not.toMatch(/nv_gpu_/);
    await triton.stop();
    expect(await start({ nvidiaSmiPath: NVIDIA_SMI, allowGpuMetrics: false })).not.toMatch(/nv_gpu_/);
  });
});
