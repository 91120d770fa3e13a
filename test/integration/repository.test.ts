import * as path from 'node:path';
import { type Triton, ensemble, workers, type Request, type Response } from '../../lib';
import { loopbackTriton } from '../helpers/loopback-triton';

const ECHO = path.join(__dirname, '../fixtures/workers/echo-model.js');
const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };

/** An in-process model object that counts its initialize/finalize calls and can be made slow. */
class Doubler {
  initialized = 0;
  finalized = 0;
  delayMs = 0;
  async initialize(): Promise<void> {
    this.initialized++;
  }
  async finalize(): Promise<void> {
    this.finalized++;
  }
  async infer(requests: Request[]): Promise<Response[]> {
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    return requests.map((r) => ({ y: { dtype: 'FP32', shape: r.inputs.x!.shape, data: (r.inputs.x!.data as Float32Array).map((v) => v * 2) } }));
  }
}

describe('model repository extension', () => {
  let triton: Triton;
  let base: string;
  let doubler: Doubler;

  beforeEach(async () => {
    doubler = new Doubler();
    triton = loopbackTriton({ modelControlMode: 'explicit' });
    triton.bind({ modelName: 'double', inferFunc: doubler, ...io, config: { batching: false } });
    triton.bind({
      modelName: 'worker_echo',
      inferFunc: workers({ module: ECHO, devices: ['cpu'] }),
      inputs: io.inputs,
      outputs: [...io.outputs, { name: 'thread', dtype: 'INT32', shape: [1] }],
      config: { batching: false },
    });
    triton.bind({
      modelName: 'pipeline',
      inferFunc: ensemble({ steps: [{ modelName: 'double', inputMap: { x: 'IN' }, outputMap: { y: 'OUT' } }] }),
      inputs: [{ name: 'IN', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'OUT', dtype: 'FP32', shape: [-1] }],
      config: { batching: false },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  afterEach(async () => {
    await triton.stop();
  });

  const post = (p: string, body?: unknown) => fetch(`${base}${p}`, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  const index = async (body?: unknown) => (await (await post('/v2/repository/index', body)).json()) as { name: string; state: string; reason?: string }[];
  const infer = (model: string, input = 'x') => post(`/v2/models/${model}/infer`, { inputs: [{ name: input, datatype: 'FP32', shape: [2], data: [1, 2] }] });
  const stateOf = async (name: string) => (await index()).find((m) => m.name === name);

  it('lists every bound model with its state, sorted by name, or only the ready ones', async () => {
    expect(await index()).toEqual([
      { name: 'double', version: '1', state: 'READY' },
      { name: 'pipeline', version: '1', state: 'READY' },
      { name: 'worker_echo', version: '1', state: 'READY' },
    ]);
    await post('/v2/repository/models/worker_echo/unload');
    expect((await index({ ready: true })).map((m) => m.name)).toEqual(['double', 'pipeline']);
    expect((await post('/v2/repository/index', { ready: 'yes' })).status).toBe(400);
  });

  it('unloads a model and its dependents, keeps the server ready, and loads them back with fresh instances', async () => {
    const unload = await post('/v2/repository/models/double/unload', { parameters: { unload_dependents: true } });
    expect(unload.status).toBe(200);
    expect(await stateOf('double')).toEqual({ name: 'double', version: '1', state: 'UNAVAILABLE', reason: 'unloaded' });
    expect((await stateOf('pipeline'))?.state).toBe('UNAVAILABLE');
    expect(doubler.finalized).toBe(1);
    const refused = await infer('double');
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: string }).error).toBe("Request for unknown model: 'double' has no available versions");
    expect((await fetch(`${base}/v2/models/double/ready`)).status).toBe(400);
    expect((await fetch(`${base}/v2/health/ready`)).status).toBe(200);

    expect((await post('/v2/repository/models/double/load')).status).toBe(200);
    expect((await post('/v2/repository/models/pipeline/load')).status).toBe(200);
    expect(doubler.initialized).toBe(2);
    expect(((await (await infer('double')).json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4]);
    expect(((await (await infer('pipeline', 'IN')).json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4]);
    expect((await stateOf('double'))?.state).toBe('READY');
  });

  it('loading a ready model changes nothing', async () => {
    expect((await post('/v2/repository/models/double/load')).status).toBe(200);
    expect([doubler.initialized, doubler.finalized]).toEqual([1, 0]);
  });

  it('brings a worker model back on a new worker thread', async () => {
    const threadOf = async () => {
      const res = await post('/v2/models/worker_echo/infer', { inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [1] }], outputs: [{ name: 'thread' }] });
      expect(res.status).toBe(200);
      return ((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data[0];
    };
    const before = await threadOf();
    await post('/v2/repository/models/worker_echo/unload');
    expect((await infer('worker_echo')).status).toBe(404);
    await post('/v2/repository/models/worker_echo/load');
    const after = await threadOf();
    expect(typeof before).toBe('number');
    expect(after).not.toBe(before);
  });

  it('lets the requests in flight finish while it unloads, refusing new ones', async () => {
    doubler.delayMs = 300;
    const inFlight = infer('double');
    await new Promise((r) => setTimeout(r, 50));
    const unloading = post('/v2/repository/models/double/unload');
    await new Promise((r) => setTimeout(r, 50));
    expect((await stateOf('double'))?.state).toBe('UNLOADING');
    expect((await infer('double')).status).toBe(404);
    expect((await inFlight).status).toBe(200);
    expect((await unloading).status).toBe(200);
    expect((await stateOf('double'))?.state).toBe('UNAVAILABLE');
  });

  it('names what it cannot do', async () => {
    const withConfig = await post('/v2/repository/models/double/load', { parameters: { config: '{"max_batch_size": 8}' } });
    expect(withConfig.status).toBe(501);
    expect(((await withConfig.json()) as { error: string }).error).toMatch(/'config' is not supported; models are bound in code/);
    const unknown = await post('/v2/repository/models/nope/load');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toBe("failed to load 'nope', failed to poll from model repository");
    expect((await post('/v2/repository/models/nope/unload')).status).toBe(400);
    expect((await post('/v2/repository/other/index')).status).toBe(501);
    expect((await fetch(`${base}/v2/repository/index`)).status).toBe(405);
  });
});
