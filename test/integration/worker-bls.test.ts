import * as path from 'node:path';
import { type Triton, workers, type Request, type Response } from '../../lib';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const CALLER = path.join(__dirname, '../fixtures/workers/bls-caller.js');
const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };

describe('request.infer from worker instances', () => {
  let triton: Triton;
  let base: string;

  beforeEach(async () => {
    // Tracked: stopped after the test even if this hook times out while the worker threads start.
    triton = track(loopbackTriton());
    const double = async (rs: Request[]): Promise<Response[]> => rs.map((r) => ({ y: { dtype: 'FP32', shape: r.inputs.x!.shape, data: (r.inputs.x!.data as Float32Array).map((v) => v * 2) } }));
    triton.bind({ modelName: 'double', inferFunc: double, ...io, config: { batching: false } });
    triton.bind({
      modelName: 'slow',
      inferFunc: async (rs: Request[]) => {
        await new Promise((r) => setTimeout(r, 300));
        return double(rs);
      },
      ...io,
      config: { batching: false },
    });
    triton.bind({ modelName: 'caller', inferFunc: workers({ module: CALLER, devices: ['cpu', 'cpu'] }), ...io, config: { batching: false } });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  const infer = async (parameters: Record<string, unknown> = {}, data = [1, 2, 3]) => {
    const res = await fetch(`${base}/v2/models/caller/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [data.length], data }], parameters }) });
    const body = (await res.json()) as { outputs?: { data: number[] }[]; error?: string };
    return { status: res.status, body };
  };

  it("calls another model through that model's scheduler and gets its outputs back in the worker", async () => {
    const results = await Promise.all([1, 2, 3, 4].map((k) => infer({}, [k, 10 * k])));
    expect(results.map((r) => r.body.outputs?.[0]?.data)).toEqual([1, 2, 3, 4].map((k) => [2 * k, 20 * k]));
    const stats = triton.modelStatistics('double')[0] as { inference_stats: { success: { count: number } } };
    expect(stats.inference_stats.success.count).toBe(4);
  });

  it("fails the caller's request with the callee named when the call fails", async () => {
    const r = await infer({ callee: 'missing' });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.body.error).toMatch(/missing/);
    expect((await infer()).status).toBe(200); // the worker is fine
  });

  it("forwards the worker-side signal: a cancelled call fails", async () => {
    const r = await infer({ callee: 'slow', abortAfterMs: 50 });
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.body.error).toMatch(/cancel|abort|timeout/i);
  });
});
