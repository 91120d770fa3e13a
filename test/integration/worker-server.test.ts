import * as path from 'node:path';
import { type Triton, workers, type TritonConfigInit } from '../../lib';
import type { HealthEvent } from '../../lib/instances';
import type { Model } from '../../lib/model';
import { ModelClient } from 'tstriton/client';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const ECHO = path.join(__dirname, '../fixtures/workers/echo-model.js');
const HELD_RESTART = path.join(__dirname, '../fixtures/workers/held-restart-model.js');

/** A running server with `seen`: the echo worker, whose `seen` output describes the array the worker received. */
async function seenServer(transport: TritonConfigInit): Promise<Triton> {
  const big = track(loopbackTriton(transport));
  big.bind({
    modelName: 'seen',
    inferFunc: workers({ module: ECHO, devices: ['cpu'] }),
    inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
    outputs: [
      { name: 'y', dtype: 'FP32', shape: [-1] },
      { name: 'seen', dtype: 'BYTES', shape: [1] },
    ],
    config: { batching: false },
  });
  await big.run();
  return big;
}

describe('worker instances behind a real server', () => {
  let triton: Triton;
  let base: string;

  beforeEach(async () => {
    // Tracked: stopped after the test even if this hook times out while the worker threads start.
    triton = track(loopbackTriton({ allowMetrics: true }));
    triton.bind({
      modelName: 'twice',
      inferFunc: workers({ module: ECHO, devices: ['cpu', 'cpu'] }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
      config: { batching: false },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  const infer = (action?: string) =>
    fetch(`${base}/v2/models/twice/infer`, {
      method: 'POST',
      body: JSON.stringify({
        parameters: action ? { action } : undefined,
        inputs: [{ name: 'x', datatype: 'FP32', shape: [3], data: [1, 2, 3] }],
        outputs: [{ name: 'y' }],
      }),
    });

  it('runs batches in worker threads and reports the instance group', async () => {
    const res = await infer();
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4, 6]);
    const config = (await (await fetch(`${base}/v2/models/twice/config`)).json()) as { instance_group: { kind: string; count: number }[] };
    expect(config.instance_group).toEqual([expect.objectContaining({ kind: 'KIND_CPU', count: 2 })]);
  });

  it('a worker killed mid-batch fails only that batch; the instance comes back and serves again', async () => {
    const model = triton.repository.get('twice');
    const restarted = new Promise<void>((resolve) => {
      for (const i of model.instances) i.onHealthChange?.((e) => e.healthy && resolve());
    });
    const killed = await infer('exit');
    expect(killed.status).toBe(500);
    expect(((await killed.json()) as { error: string }).error).toMatch(/instance twice_\d: the worker thread exited with code 1/);
    await restarted;
    expect(model.instances.every((i) => i.healthy)).toBe(true);
    expect(model.ready).toBe(true);
    const after = await Promise.all([infer(), infer(), infer(), infer()]);
    expect(after.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const metrics = await (await fetch(`http://127.0.0.1:${triton.ports.metrics}/metrics`)).text();
    const healthy = metrics.split('\n').filter((l) => l.startsWith('tstriton_instance_healthy{') && l.includes('model="twice"'));
    expect(healthy).toHaveLength(2);
    expect(healthy.every((l) => l.endsWith(' 1'))).toBe(true);
    expect(model.statistics.failures.BACKEND).toBe(1);
  });

  it('runs a request that waited inside a worker which then crashed, instead of failing it', async () => {
    const solo = track(loopbackTriton());
    solo.bind({
      modelName: 'solo',
      inferFunc: workers({ module: ECHO, devices: ['cpu'] }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
      config: { batching: false },
    });
    await solo.run();
    try {
      const send = (action?: string) =>
        fetch(`http://127.0.0.1:${solo.ports.http}/v2/models/solo/infer`, {
          method: 'POST',
          body: JSON.stringify({ parameters: action ? { action } : undefined, inputs: [{ name: 'x', datatype: 'FP32', shape: [3], data: [1, 2, 3] }], outputs: [{ name: 'y' }] }),
        });
      const crashing = send('sleep-then-exit');
      // Sent while the first one runs: the only instance takes it as its next batch.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const waiting = send();
      const [crashed, served] = await Promise.all([crashing, waiting]);
      expect(crashed.status).toBe(500);
      expect(served.status).toBe(200);
      expect(((await served.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4, 6]);
      const stats = solo.repository.get('solo').statistics;
      expect(stats.failures.BACKEND).toBe(1);
    } finally {
      await solo.stop();
    }
  });

  it('hands a large binary input to the worker in the request body it arrived in, without copying it out', async () => {
    const big = await seenServer({});
    try {
      const n = 1 << 16;
      const x = new Float32Array(n).map((_, i) => i % 7);
      const json = JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [n], parameters: { binary_data_size: n * 4 } }] });
      // Padded to a multiple of 4 bytes, so the FP32 data is aligned where it lies in the body.
      const header = Buffer.from(json.padEnd(Math.ceil(json.length / 4) * 4, ' '));
      const res = await fetch(`http://127.0.0.1:${big.ports.http}/v2/models/seen/infer`, {
        method: 'POST',
        headers: { 'Inference-Header-Content-Length': String(header.length) },
        body: Buffer.concat([header, Buffer.from(x.buffer)]),
      });
      expect(res.status).toBe(200);
      const out = (await res.json()) as { outputs: { name: string; data: (number | string)[] }[] };
      const y = out.outputs.find((o) => o.name === 'y')!.data as number[];
      expect(y.length).toBe(n);
      expect(y.slice(0, 8)).toEqual([0, 2, 4, 6, 8, 10, 12, 0]);
      // The worker's array views the whole body: it starts after the JSON header, in a buffer as large as the body.
      const seen = JSON.parse(out.outputs.find((o) => o.name === 'seen')!.data[0] as string) as { byteOffset: number; bufferByteLength: number };
      expect(seen.byteOffset).toBe(header.length);
      expect(seen.bufferByteLength).toBe(header.length + n * 4);
    } finally {
      await big.stop();
    }
  });

  it('hands a large gRPC input to the worker in the message it arrived in, when its bytes are aligned there', async () => {
    const big = await seenServer({ allowGrpc: true, allowHttp: false });
    let client: ModelClient | undefined;
    try {
      client = new ModelClient(`grpc://127.0.0.1:${big.ports.grpc}`, 'seen');
      const n = 1 << 16;
      const x = new Float32Array(n).map((_, i) => i % 7);
      const seen: { byteOffset: number; bufferByteLength: number }[] = [];
      // Ids of four lengths put the tensor bytes at four offsets in the message: one of them is 4-byte aligned.
      for (const id of ['a', 'aa', 'aaa', 'aaaa']) {
        const out = await client.inferSample({ x }, { id });
        expect(Array.from((out.y!.data as Float32Array).subarray(0, 8))).toEqual([0, 2, 4, 6, 8, 10, 12, 0]);
        seen.push(JSON.parse(Buffer.from((out.seen!.data as Uint8Array[])[0]!).toString()) as { byteOffset: number; bufferByteLength: number });
      }
      // Aligned: the worker's array views the message buffer (larger than the data, past the fields before it).
      const inMessage = seen.filter((s) => s.bufferByteLength > n * 4);
      expect(inMessage.length).toBeGreaterThanOrEqual(1);
      for (const s of inMessage) expect(s.byteOffset).toBeGreaterThan(0);
      // Unaligned: one aligned copy of its own, moved to the worker as it is.
      for (const s of seen.filter((v) => v.bufferByteLength <= n * 4)) expect([s.byteOffset, s.bufferByteLength]).toEqual([0, n * 4]);
    } finally {
      client?.close();
      await big.stop();
    }
  });
});

/** Values of the held-restart fixture's gate: what a worker that starts does. */
const GATE = { open: 0, held: 1, fail: 2 } as const;

/**
 * Resolves once `model.infer` has been called `n` more times. The model decides there, synchronously, whether
 * it takes a request (its readiness check) and queues it: past this point, every one of them is queued or refused.
 */
function arrivals(model: Model, n: number): Promise<void> {
  const infer = model.infer.bind(model);
  return new Promise((resolve) => {
    let seen = 0;
    jest.spyOn(model, 'infer').mockImplementation((request) => {
      const result = infer(request);
      if (++seen === n) resolve();
      return result;
    });
  });
}

describe('a worker instance restarting after a crash', () => {
  let triton: Triton;
  let gate: Int32Array;
  let base: string;
  const N = 4;

  const setGate = (value: number) => {
    Atomics.store(gate, 0, value);
    Atomics.notify(gate, 0);
  };

  beforeEach(async () => {
    gate = new Int32Array(new SharedArrayBuffer(4));
    // Tracked: stopped after this file's afterEach has opened the gate, even if this hook times out.
    triton = track(loopbackTriton());
    triton.bind({
      modelName: 'solo',
      // A second failure in a row backs off for longer than any test runs.
      inferFunc: workers({ module: HELD_RESTART, devices: ['cpu'], data: { gate: gate.buffer }, options: { restartDelayMs: 60_000, maxRestartDelayMs: 60_000 } }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
      outputs: [
        { name: 'y', dtype: 'FP32', shape: [-1] },
        { name: 'thread', dtype: 'INT32', shape: [1] },
      ],
      config: { batching: false },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  afterEach(async () => {
    setGate(GATE.open);
    jest.restoreAllMocks();
  });

  const send = (x: number[], action?: string) =>
    fetch(`${base}/v2/models/solo/infer`, {
      method: 'POST',
      body: JSON.stringify({ parameters: action ? { action } : undefined, inputs: [{ name: 'x', datatype: 'FP32', shape: [x.length], data: x }] }),
    });

  type Outputs = { outputs?: { name: string; data: number[] }[]; error?: string };
  const threadOf = (body: Outputs) => body.outputs!.find((o) => o.name === 'thread')!.data[0];

  /**
   * Crashes the only worker with its restart held at the gate, and sends `N` requests the moment the crash is
   * observed (its health event); resolves once the model has taken or refused each, with what the model and
   * the instance said at the crash and the requests' responses to come.
   */
  async function crashAndSend(model: Model): Promise<{ ready: boolean; healthy: boolean; recovering: boolean | undefined; responses: Promise<Response[]> }> {
    const instance = model.instances[0]!;
    setGate(GATE.held);
    const observed = new Promise<{ ready: boolean; healthy: boolean; recovering: boolean | undefined; arrived: Promise<void>; responses: Promise<Response[]> }>((resolve) => {
      const off = instance.onHealthChange!((e) => {
        if (e.healthy) return;
        off();
        const arrived = arrivals(model, N);
        const responses = Promise.all(Array.from({ length: N }, (_, i) => send([i, i + 1, i + 2])));
        resolve({ ready: model.ready, healthy: instance.healthy, recovering: instance.recovering, arrived, responses });
      });
    });
    const crashed = await send([0], 'exit');
    expect(crashed.status).toBe(500);
    expect(((await crashed.json()) as Outputs).error).toMatch(/^instance solo_0: the worker thread exited with code 1; the batch it was running failed and the worker is restarting$/);
    const { arrived, ...seen } = await observed;
    await arrived;
    return seen;
  }

  it('queues requests that arrive while the only worker restarts, stays ready, and runs them on the new worker', async () => {
    const model = triton.repository.get('solo');
    const instance = model.instances[0]!;
    const first = await send([1]);
    expect(first.status).toBe(200);
    const crashedThread = threadOf((await first.json()) as Outputs);

    const during = await crashAndSend(model);
    expect({ ready: during.ready, healthy: during.healthy, recovering: during.recovering }).toEqual({ ready: true, healthy: false, recovering: true });
    // The restart is still held: every request waits in the queue, and the model answers that it is ready.
    expect(instance.healthy).toBe(false);
    expect(model.scheduler.pendingCount).toBe(N);
    expect((await fetch(`${base}/v2/models/solo/ready`)).status).toBe(200);
    expect((await fetch(`${base}/v2/health/ready`)).status).toBe(200);

    setGate(GATE.open);
    const responses = await during.responses;
    expect(responses.map((r) => r.status)).toEqual(Array(N).fill(200));
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as Outputs[];
    expect(bodies.map((b) => b.outputs!.find((o) => o.name === 'y')!.data)).toEqual(Array.from({ length: N }, (_, i) => [2 * i, 2 * i + 2, 2 * i + 4]));
    for (const b of bodies) expect(threadOf(b)).not.toBe(crashedThread);
    expect(instance.healthy).toBe(true);
    expect(model.statistics.failures.BACKEND).toBe(1);
  });

  it('fails the queued requests and turns the model not ready once the restart fails and the worker backs off', async () => {
    const model = triton.repository.get('solo');
    const instance = model.instances[0]!;
    const during = await crashAndSend(model);
    expect(during.ready).toBe(true);
    expect(model.scheduler.pendingCount).toBe(N);

    const backingOff = new Promise<HealthEvent>((resolve) => {
      instance.onHealthChange!((e) => {
        if (e.retryInMs) resolve(e);
      });
    });
    setGate(GATE.fail);
    expect((await backingOff).retryInMs).toBe(60_000);
    expect(model.ready).toBe(false);
    expect(instance.recovering).toBe(false);
    expect(model.scheduler.pendingCount).toBe(0);
    const responses = await during.responses;
    expect(responses.map((r) => r.status)).toEqual(Array(N).fill(400));
    for (const r of responses) {
      expect(((await r.json()) as Outputs).error).toBe(
        "Request for unavailable model: 'solo' is not ready: instance solo_0 keeps failing and waits 60000 ms before it restarts again (last failure: instance solo_0 failed to start: the device is gone)",
      );
    }
    // New requests are refused while it backs off.
    expect((await fetch(`${base}/v2/models/solo/ready`)).status).toBe(400);
    const refused = await send([1]);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as Outputs).error).toBe("Request for unavailable model: 'solo' is not ready");
  });
});
