import { type Triton, ensemble, tensor, type Request, type Tensor } from '../../lib';
import { batch } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

/** Binds `scale` (y = 2x), `shift` (y = x + 1) and `fail` (always throws) FP32 [-1] models, batching up to 8. */
function bindSteps(triton: Triton, executions: Record<string, number[]> = {}): void {
  const elementwise = (name: string, f: (v: number) => number) =>
    triton.bind({
      modelName: name,
      inferFunc: batch(async ({ x }: Record<string, Tensor>) => {
        (executions[name] ??= []).push(x!.shape[0]!);
        return { y: tensor('FP32', x!.shape, (x!.data as Float32Array).map(f)) };
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8, batcher: { maxQueueDelayMicroseconds: 20_000, preferredBatchSize: [4] } },
    });
  elementwise('scale', (v) => v * 2);
  elementwise('shift', (v) => v + 1);
  triton.bind({
    modelName: 'fail',
    inferFunc: batch(() => {
      throw new Error('step exploded');
    }),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
}

/** The ensemble scale → shift (OUT = 2·IN + 1) over the models `bindSteps` binds. */
const scaleThenShift = () =>
  ensemble({
    steps: [
      { modelName: 'scale', inputMap: { x: 'IN' }, outputMap: { y: 'doubled' } },
      { modelName: 'shift', inputMap: { x: 'doubled' }, outputMap: { y: 'OUT' } },
    ],
  });

const io = {
  inputs: [{ name: 'IN', dtype: 'FP32' as const, shape: [-1] }],
  outputs: [{ name: 'OUT', dtype: 'FP32' as const, shape: [-1] }],
  config: { maxBatchSize: 8 },
};

const post = (triton: Triton, model: string, data: number[]) =>
  fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify({ inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, data.length], data }] }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { outputs?: { name: string; data: number[] }[]; error?: string } }));

describe('ensembles', () => {
  let triton: Triton;
  afterEach(async () => {
    await triton.stop();
  });

  it('runs steps in order, batches them with other traffic, and reports Triton ensemble config', async () => {
    triton = loopbackTriton();
    const executions: Record<string, number[]> = {};
    bindSteps(triton, executions);
    triton.bind({
      modelName: 'scale_then_shift',
      inferFunc: scaleThenShift(),
      ...io,
    });
    await triton.run();
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => post(triton, 'scale_then_shift', [i, 10])));
    expect(results.map((r) => r.body.outputs![0]!.data)).toEqual(Array.from({ length: 8 }, (_, i) => [2 * i + 1, 21]));
    expect(Math.max(...executions.scale!)).toBeGreaterThan(1);
    const config = (await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/scale_then_shift/config`)).json()) as Record<string, unknown>;
    expect(config.platform).toBe('ensemble');
    expect(config).not.toHaveProperty('dynamic_batching');
    expect(config.ensemble_scheduling).toEqual({
      step: [
        { model_name: 'scale', model_version: -1, input_map: { x: 'IN' }, output_map: { y: 'doubled' }, model_namespace: '' },
        { model_name: 'shift', model_version: -1, input_map: { x: 'doubled' }, output_map: { y: 'OUT' }, model_namespace: '' },
      ],
    });
    const meta = (await (await fetch(`http://127.0.0.1:${triton.ports.http}/v2/models/scale_then_shift`)).json()) as { platform: string };
    expect(meta.platform).toBe('ensemble');
  });

  it('answers a repeated request to an ensemble with responseCache from the cache, running no step', async () => {
    triton = loopbackTriton({ responseCacheByteSize: 1 << 16 });
    const executions: Record<string, number[]> = {};
    bindSteps(triton, executions);
    triton.bind({
      modelName: 'cached_pipeline',
      inferFunc: scaleThenShift(),
      ...io,
      config: { ...io.config, responseCache: true },
    });
    await triton.run();
    const first = await post(triton, 'cached_pipeline', [3]);
    const second = await post(triton, 'cached_pipeline', [3]);
    expect(second.body.outputs).toEqual(first.body.outputs);
    expect(first.body.outputs![0]!.data).toEqual([7]);
    expect(executions).toEqual({ scale: [1], shift: [1] });
    const stats = triton.modelStatistics('cached_pipeline')[0] as { inference_stats: Record<string, { count: number }> };
    expect([stats.inference_stats.cache_hit!.count, stats.inference_stats.cache_miss!.count]).toEqual([1, 1]);
  });

  it('a failing step fails the request with the step model named', async () => {
    triton = loopbackTriton();
    bindSteps(triton);
    triton.bind({ modelName: 'broken', inferFunc: ensemble({ steps: [{ modelName: 'fail', inputMap: { x: 'IN' }, outputMap: { y: 'OUT' } }] }), ...io });
    await triton.run();
    const r = await post(triton, 'broken', [1]);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe("model 'broken' calling 'fail': step exploded");
  });

  it.each([
    ['an unknown model', [{ modelName: 'nope', inputMap: { x: 'IN' }, outputMap: { y: 'OUT' } }], /step 0 \(model 'nope'\): unknown model 'nope'; an ensemble's step models must be loaded before the ensemble/],
    ['an unmapped step input', [{ modelName: 'scale', inputMap: {}, outputMap: { y: 'OUT' } }], /step 0 \(model 'scale'\): input 'x' is not mapped/],
    ['a mapped name the step lacks', [{ modelName: 'scale', inputMap: { x: 'IN', z: 'IN' }, outputMap: { y: 'OUT' } }], /input_map names 'z', which is not an input of 'scale'/],
    ['a tensor nobody produces', [{ modelName: 'scale', inputMap: { x: 'ghost' }, outputMap: { y: 'OUT' } }], /tensor 'ghost' \(for input 'x'\) is neither an ensemble input nor produced by a step/],
    ['an output nobody produces', [{ modelName: 'scale', inputMap: { x: 'IN' }, outputMap: { y: 'other' } }], /output 'OUT' is not produced by any step/],
    ['a tensor produced twice', [
      { modelName: 'scale', inputMap: { x: 'IN' }, outputMap: { y: 'OUT' } },
      { modelName: 'shift', inputMap: { x: 'IN' }, outputMap: { y: 'OUT' } },
    ], /tensor 'OUT' is already produced by step 0/],
    ['a cycle', [
      { modelName: 'scale', inputMap: { x: 'b' }, outputMap: { y: 'a' } },
      { modelName: 'shift', inputMap: { x: 'a' }, outputMap: { y: 'b' } },
      { modelName: 'fail', inputMap: { x: 'IN' }, outputMap: { y: 'OUT' } },
    ], /has a cycle through step 0 \(model 'scale'\), step 1 \(model 'shift'\)/],
  ])('rejects %s at bind', (_what, steps, message) => {
    triton = loopbackTriton({ allowHttp: false });
    bindSteps(triton);
    expect(() => triton.bind({ modelName: 'e', inferFunc: ensemble({ steps }), ...io })).toThrow(message);
  });

  it('rejects a dtype that changes between steps', () => {
    triton = loopbackTriton({ allowHttp: false });
    bindSteps(triton);
    triton.bind({
      modelName: 'ints',
      inferFunc: (rs: Request[]) => rs.map((r) => ({ y: r.inputs.x! })),
      inputs: [{ name: 'x', dtype: 'INT32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'INT32', shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
    expect(() =>
      triton.bind({
        modelName: 'e',
        inferFunc: ensemble({
          steps: [
            { modelName: 'scale', inputMap: { x: 'IN' }, outputMap: { y: 'mid' } },
            { modelName: 'ints', inputMap: { x: 'mid' }, outputMap: { y: 'OUT' } },
          ],
        }),
        ...io,
      }),
    ).toThrow(/step 1 \(model 'ints'\): tensor 'mid' is FP32 \(from step 0 \(model 'scale'\)\) but input 'x' expects INT32/);
  });
});

describe('BLS', () => {
  let triton: Triton;
  afterEach(async () => {
    await triton.stop();
  });

  it('a callable calls other models, stops early, and sees callee errors with the callee named', async () => {
    triton = loopbackTriton();
    const executions: Record<string, number[]> = {};
    bindSteps(triton, executions);
    triton.bind({
      modelName: 'pipeline',
      inferFunc: async (requests: Request[]) =>
        Promise.all(
          requests.map(async (r) => {
            const doubled = await r.infer!({ modelName: 'scale', inputs: { x: r.inputs.IN! } });
            const first = (doubled.y!.data as Float32Array)[0]!;
            if (first < 0) return { OUT: doubled.y! }; // stop early: shift never runs
            if (first === 200) await r.infer!({ modelName: 'fail', inputs: { x: doubled.y! } });
            const shifted = await r.infer!({ modelName: 'shift', inputs: { x: doubled.y! } });
            return { OUT: shifted.y! };
          }),
        ),
      ...io,
    });
    await triton.run();
    expect((await post(triton, 'pipeline', [3])).body.outputs![0]!.data).toEqual([7]);
    expect((await post(triton, 'pipeline', [-1])).body.outputs![0]!.data).toEqual([-2]);
    expect(executions.shift).toHaveLength(1);
    const failed = await post(triton, 'pipeline', [100]);
    expect(failed.status).toBe(500);
    expect(failed.body.error).toBe("model 'pipeline' calling 'fail': step exploded");
  });

  it('detects a model calling itself with too few instances instead of hanging', async () => {
    triton = loopbackTriton();
    triton.bind({
      modelName: 'recursive',
      inferFunc: async (requests: Request[]) =>
        Promise.all(requests.map(async (r) => ({ OUT: (await r.infer!({ modelName: 'recursive', inputs: r.inputs })).OUT! }))),
      ...io,
    });
    await triton.run();
    const r = await post(triton, 'recursive', [1]);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/model 'recursive' calls 'recursive', whose 1 instance\(s\) are all held by its callers \(recursive\); this would deadlock/);
  });

  it('calls a model on a second server over HTTP and gRPC URLs', async () => {
    const remote = loopbackTriton({ allowGrpc: true });
    bindSteps(remote);
    await remote.run();
    triton = loopbackTriton();
    triton.bind({
      modelName: 'proxy',
      inferFunc: async (requests: Request[]) =>
        Promise.all(
          requests.map(async (r) => {
            const viaHttp = await r.infer!({ modelName: 'scale', inputs: { x: r.inputs.IN! }, url: `http://127.0.0.1:${remote.ports.http}` });
            const viaGrpc = await r.infer!({ modelName: 'shift', inputs: { x: viaHttp.y! }, url: `grpc://127.0.0.1:${remote.ports.grpc}` });
            return { OUT: viaGrpc.y! };
          }),
        ),
      ...io,
    });
    await triton.run();
    try {
      expect((await post(triton, 'proxy', [5, 6])).body.outputs![0]!.data).toEqual([11, 13]);
      const missing = await (async () => {
        triton.bind({
          modelName: 'proxy_missing',
          inferFunc: async (requests: Request[]) =>
            Promise.all(requests.map(async (r) => ({ OUT: (await r.infer!({ modelName: 'absent', inputs: { x: r.inputs.IN! }, url: `http://127.0.0.1:${remote.ports.http}` })).y! }))),
          ...io,
        });
        while (!triton.repository.find('proxy_missing').ready) await new Promise((res) => setImmediate(res));
        return post(triton, 'proxy_missing', [1]);
      })();
      expect(missing.status).toBe(400);
      expect(missing.body.error).toMatch(/model 'proxy_missing' calling 'absent' at http:\/\/127\.0\.0\.1:\d+: .*unknown model/);
    } finally {
      await remote.stop();
    }
  });
});
