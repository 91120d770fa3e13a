import { join } from 'node:path';
import { BroadcastChannel, threadId } from 'node:worker_threads';
import type { Request, Response } from '../../lib/callable/callable';
import { NEVER_ABORTED } from '../../lib/callable/callable-marks';
import { Cancellation, CANCELLATION } from '../../lib/base/cancellation';
import { TritonError, UnrecoverableError } from '../../lib/base/errors';
import type { Device, HealthEvent, Instance, InstanceContext } from '../../lib/instances/instance';
import { WorkerInstance } from '../../lib/instances/worker-instance';
import { BatchNotStarted } from '../../lib/instances/instance-errors';
import { workers, type WorkerOptions } from '../../lib/instances/worker-spec';
import { checkData, type Tensor } from '../../lib/tensor/tensor';

const fixtures = join(__dirname, '../fixtures/workers');
const ECHO = join(fixtures, 'echo-model.js');
const LIFECYCLE = join(fixtures, 'lifecycle-model.js');
const LIFECYCLE_CHANNEL = 'tstriton-fixture-lifecycle';

const cpu: Device = { kind: 'cpu', id: 0 };

function contextFor(instanceName: string, device: Device): InstanceContext {
  return { modelName: 'm', modelVersion: '1', modelConfig: { name: 'm', max_batch_size: 8 }, instanceName, device };
}

const started: Instance[] = [];
afterEach(async () => {
  await Promise.allSettled(started.splice(0).map((i) => i.close()));
});

/** Builds and starts a worker instance, closed after the test. */
async function startWorker(opts: { module?: string; exportName?: string; name?: string; device?: Device; options?: WorkerOptions } = {}): Promise<WorkerInstance> {
  const device = opts.device ?? cpu;
  const name = opts.name ?? 'm_0';
  const spec = workers({ module: opts.module ?? ECHO, exportName: opts.exportName, devices: [device], options: opts.options });
  const instance = new WorkerInstance(name, device, spec);
  started.push(instance);
  await instance.start(contextFor(name, device));
  return instance;
}

function req(inputs: Record<string, Tensor> = {}, parameters: Record<string, string> = {}, cancellation?: Cancellation): Request {
  const request: Request = { inputs, parameters, requestedOutputs: [], id: 'r', signal: cancellation?.signal ?? NEVER_ABORTED };
  return cancellation ? ({ ...request, [CANCELLATION]: cancellation } as Request) : request;
}

const act = (action: string, cancellation?: Cancellation) => req({}, { action }, cancellation);

/** A Cancellation aborted with `reason`. */
const aborted = (reason: Error) => {
  const c = new Cancellation();
  c.abort(reason);
  return c;
};

/** The worker's thread id, which every echo response carries. */
const threadOf = (r: Response) => ((r.thread as Tensor).data as Int32Array)[0];

const text = (r: Response, name: string) => ((r[name] as Tensor).data as Uint8Array[]).map((e) => Buffer.from(e).toString('utf8'));

describe('worker instances', () => {
  it('runs a batch in the worker thread and returns numeric and BYTES outputs', async () => {
    const instance = await startWorker();
    expect(instance.healthy).toBe(true);
    const [a, b] = await instance.execute([
      req({ x: { dtype: 'FP32', shape: [3], data: new Float32Array([1, 2.5, -3]) }, s: { dtype: 'BYTES', shape: [2], data: [Buffer.from('héllo'), Buffer.from('')] } }),
      req({ n: { dtype: 'INT64', shape: [2], data: new BigInt64Array([5n, -(2n ** 62n)]) } }),
    ]);
    expect(threadOf(a!)).not.toBe(threadId);
    expect(threadOf(a!)).toBe(threadOf(b!));
    expect(a!.y).toEqual({ dtype: 'FP32', shape: [3], data: new Float32Array([2, 5, -6]) });
    expect(text(a!, 'u')).toEqual(['HÉLLO', '']);
    expect(b!.m).toEqual({ shape: [2], data: new BigInt64Array([-5n, 2n ** 62n]) });
    expect((b!.m as Tensor).data).toBeInstanceOf(BigInt64Array);
    // What the model's output validation checks, in this (jest's) realm too.
    expect(checkData('FP32', (a!.y as Tensor).data)).toBeUndefined();
    expect(checkData('BYTES', (a!.u as Tensor).data)).toBeUndefined();
    expect(checkData('INT64', (b!.m as Tensor).data)).toBeUndefined();
  });

  it('copies a batch’s small inputs once into one private buffer and moves a large one that owns its buffer', async () => {
    const instance = await startWorker();
    const owned = new Float32Array([1, 2, 3]);
    const body = Buffer.alloc(1 << 16, 7);
    const view = new Float32Array(body.buffer, body.byteOffset + 64, 3);
    view.set([4, 5, 6]);
    const [fromOwned, fromView] = await instance.execute([
      req({ x: { dtype: 'FP32', shape: [3], data: owned } }),
      req({ x: { dtype: 'FP32', shape: [3], data: view } }),
    ]);
    // Copied once, back to back into one 24-byte buffer: the owned array and the 64 KiB body stay intact here.
    expect(Array.from(owned)).toEqual([1, 2, 3]);
    expect(body.buffer.byteLength).toBeGreaterThanOrEqual(1 << 16);
    expect(Array.from(view)).toEqual([4, 5, 6]);
    expect(JSON.parse(text(fromOwned!, 'seen')[0]!)).toEqual({ byteOffset: 0, byteLength: 12, bufferByteLength: 24, shared: false });
    expect(JSON.parse(text(fromView!, 'seen')[0]!)).toEqual({ byteOffset: 12, byteLength: 12, bufferByteLength: 24, shared: false });
    expect((fromView!.y as Tensor).data).toEqual(new Float32Array([8, 10, 12]));

    // A lone input that owns its buffer is transferred: detached here, and the worker got exactly that buffer.
    const large = new Float32Array(1 << 14).fill(0.5);
    const [fromLarge] = await instance.execute([req({ x: { dtype: 'FP32', shape: [large.length], data: large } })]);
    expect(large.buffer.byteLength).toBe(0);
    expect(JSON.parse(text(fromLarge!, 'seen')[0]!)).toEqual({ byteOffset: 0, byteLength: 1 << 16, bufferByteLength: 1 << 16, shared: false });
    expect(((fromLarge!.y as Tensor).data as Float32Array)[100]).toBe(1);
  });

  it.each([
    ['process.exit(1)', 'exit', /the worker thread exited with code 1/, {}],
    ['an uncaught error thrown asynchronously', 'throw-async', /the worker thread crashed with an uncaught Error: kaboom from a timer/, {}],
    ['running out of memory', 'oom', /the worker thread ran out of memory/, { resourceLimits: { maxOldGenerationSizeMb: 32 } }],
  ])('fails only the batch of a worker killed by %s, then restarts it', async (_what, action, reason, options: WorkerOptions) => {
    const instance = await startWorker({ options });
    const before = threadOf((await instance.execute([req()]))[0]!);
    const events: HealthEvent[] = [];
    instance.onHealthChange((e) => events.push(e));

    const err = await instance.execute([act(action)]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).code).toBe('INFERENCE_FAILED');
    expect((err as TritonError).message).toMatch(/^instance m_0: /);
    expect((err as TritonError).message).toMatch(reason);
    expect((err as TritonError).message).toMatch(/the worker is restarting$/);
    expect(instance.healthy).toBe(false);
    // Restarting at once, the instance is coming back: its model stays ready and requests queue for it.
    expect(instance.recovering).toBe(true);

    // A batch given while the worker restarts waits for it rather than failing.
    const [after] = await instance.execute([req()]);
    expect(instance.healthy).toBe(true);
    expect(instance.recovering).toBe(false);
    expect(threadOf(after!)).not.toBe(before);
    expect(events.map((e) => [e.healthy, e.retryInMs])).toEqual([
      [false, 0],
      [true, undefined],
    ]);
    expect(events[0]!.cause).toBe(err);
  });

  it('keeps other instances’ batches running when one worker crashes, and forwards aborts', async () => {
    const [a, b] = await Promise.all([startWorker({ name: 'm_0' }), startWorker({ name: 'm_1' })]);
    const controller = new Cancellation();
    const slow = b.execute([act('wait-abort', controller)]);
    await expect(a.execute([act('exit')])).rejects.toThrow(/instance m_0: the worker thread exited with code 1/);
    expect(b.healthy).toBe(true);
    controller.abort(new Error('client went away'));
    const [response] = await slow;
    expect(text(response!, 's')).toEqual(['aborted: client went away']);
  });

  it('gives a request aborted before its batch an already aborted signal in the worker', async () => {
    const instance = await startWorker();
    const [response] = await instance.execute([act('wait-abort', aborted(new Error('too late')))]);
    expect(text(response!, 's')).toEqual(['aborted: too late']);
  });

  it('re-throws an UnrecoverableError as UnrecoverableError, keeps TritonError codes and plain errors’ messages', async () => {
    const instance = await startWorker();
    const unrecoverable = await instance.execute([act('unrecoverable')]).catch((e: unknown) => e);
    expect(unrecoverable).toBeInstanceOf(UnrecoverableError);
    expect((unrecoverable as Error).message).toBe('device lost');
    expect((unrecoverable as Error).stack).toContain('echo-model.js');

    const triton = await instance.execute([act('triton-error')]).catch((e: unknown) => e);
    expect(triton).toBeInstanceOf(TritonError);
    expect(triton).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'input "x": expected 4 rows, got 3' });

    const plain = await instance.execute([act('error')]).catch((e: unknown) => e);
    expect(plain).not.toBeInstanceOf(TritonError);
    expect(plain).toMatchObject({ name: 'RangeError', message: 'plain failure' });

    // None of these crashed the worker.
    expect(instance.healthy).toBe(true);
    expect(await instance.execute([req()])).toHaveLength(1);
  });

  it('constructs a class export with the context, calls initialize(context) and, on close, finalize()', async () => {
    const device: Device = { kind: 'gpu', id: 1 };
    const finalized = new Promise<unknown>((resolve) => {
      const channel = new BroadcastChannel(LIFECYCLE_CHANNEL);
      channel.onmessage = (e) => {
        channel.close();
        resolve((e as MessageEvent).data);
      };
    });
    const instance = await startWorker({ module: LIFECYCLE, name: 'm_3', device });
    const [response] = await instance.execute([req()]);
    const info = JSON.parse(text(response!, 'info')[0]!);
    expect(info).toMatchObject({ constructedWith: 'm_3', initialized: contextFor('m_3', device), isMainThread: false });
    await instance.close();
    expect(await finalized).toEqual({ event: 'finalize', instanceName: 'm_3', threadId: info.threadId });
    expect(instance.healthy).toBe(false);
    await expect(instance.execute([req()])).rejects.toThrow('instance m_3 is closed');
  });

  it('builds a factory export’s callable with the device in its context', async () => {
    const device: Device = { kind: 'gpu', id: 0 };
    const instance = await startWorker({ module: LIFECYCLE, exportName: 'factory', device });
    const info = JSON.parse(text((await instance.execute([req()]))[0]!, 'info')[0]!);
    expect(info.factoryDevice).toEqual(device);
    expect(info.initialized.device).toEqual(device);
  });

  it('loads an ES module and a decorated object', async () => {
    const esm = await startWorker({ module: join(fixtures, 'esm-model.mjs') });
    expect((await esm.execute([req({ x: { dtype: 'FP32', shape: [2], data: new Float32Array([1, -2]) } })]))[0]!.y).toEqual({
      shape: [2],
      data: new Float32Array([-1, 2]),
    });
    const decorated = await startWorker({ module: join(fixtures, 'decorated-model.js') });
    const responses = await decorated.execute([
      req({ x: { dtype: 'FP32', shape: [1], data: new Float32Array([1]) } }),
      req({ x: { dtype: 'FP32', shape: [2], data: new Float32Array([2, 3]) } }),
    ]);
    expect(responses.map((r) => Array.from((r.y as Tensor).data as Float32Array))).toEqual([[3], [6, 9]]);
  });

  it('runs the batches it is given one after another, in order, even when the callable awaits', async () => {
    const instance = await startWorker();
    const [[slow], [quick]] = await Promise.all([instance.execute([act('sleep')]), instance.execute([act('stamp')])]);
    const [, slowEnd] = (slow!.t as Tensor).data as Float64Array;
    const [quickAt] = (quick!.t as Tensor).data as Float64Array;
    expect(quickAt!).toBeGreaterThanOrEqual(slowEnd!);
  });

  it('fails the running batch of a crashed worker and marks the batch waiting behind it as never started', async () => {
    const instance = await startWorker();
    const x = new Float32Array([1, 2]);
    const [crashed, waiting] = await Promise.allSettled([
      instance.execute([act('sleep-then-exit')]),
      instance.execute([req({ x: { dtype: 'FP32', shape: [2], data: x } })]),
    ]);
    expect((crashed as PromiseRejectedResult).reason.message).toMatch(/the worker thread exited with code 1/);
    expect((waiting as PromiseRejectedResult).reason).toBeInstanceOf(BatchNotStarted);
    // Its inputs were copied, not moved, so the scheduler can run it again.
    expect(Array.from(x)).toEqual([1, 2]);
  });

  it('runs two worker instances’ batches at the same time', async () => {
    const [a, b] = await Promise.all([startWorker({ name: 'm_0' }), startWorker({ name: 'm_1' })]);
    // Each worker counts itself in on shared memory and waits (up to 10 s) for the other: both can only see
    // two arrivals if their batches overlap.
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const barrier = (): Request => req({ barrier: { dtype: 'INT32', shape: [1], data: cell } }, { action: 'barrier' });
    const [[ra], [rb]] = await Promise.all([a.execute([barrier()]), b.execute([barrier()])]);
    const [startA, endA, arrivedA] = (ra!.t as Tensor).data as Float64Array;
    const [startB, endB, arrivedB] = (rb!.t as Tensor).data as Float64Array;
    expect([arrivedA, arrivedB]).toEqual([2, 2]);
    expect(startA!).toBeLessThan(endB!);
    expect(startB!).toBeLessThan(endA!);
  });

  it('lets close() wait for the batch in flight', async () => {
    const instance = await startWorker();
    const controller = new Cancellation();
    const inFlight = instance.execute([act('wait-abort', controller)]);
    const closed = instance.close();
    expect(instance.healthy).toBe(false);
    controller.abort(new Error('done'));
    expect(text((await inFlight)[0]!, 's')).toEqual(['aborted: done']);
    await closed;
  });

  it.each([
    ['a module that does not parse', { module: join(fixtures, 'syntax-error-model.js') }, 'INFERENCE_FAILED', /^instance m_0 failed to start: .*(Unexpected|missing)/],
    ['a missing export', { module: LIFECYCLE, exportName: 'nope' }, 'INVALID_CONFIG', /^instance m_0 failed to start: module '.*lifecycle-model\.js' has no export 'nope' \(it exports: default, factory/],
    ['an export that is no callable', { module: LIFECYCLE, exportName: 'notCallable' }, 'INVALID_CONFIG', /must be a function or an object with a decorated method, got number/],
    ['a factory returning nothing usable', { module: LIFECYCLE, exportName: 'factoryOfNothing' }, 'INVALID_CONFIG', /the instance factory must return a callable or an object/],
  ])('fails start() for %s with a clear error', async (_what, opts, code, message) => {
    const err = await startWorker(opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).code).toBe(code);
    expect((err as TritonError).message).toMatch(message);
    expect(started[0]!.healthy).toBe(false);
  });

  it('fails start() with an UnrecoverableError thrown by initialize()', async () => {
    const err = await startWorker({ module: LIFECYCLE, options: { env: { TSTRITON_FIXTURE_FAIL_START: 'unrecoverable' } } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnrecoverableError);
    expect((err as Error).message).toBe('no device at start');
  });
});

describe('worker restarts', () => {
  /** The env each new worker starts with: the fixture's initialize() fails while TSTRITON_FIXTURE_FAIL_START is set. */
  const env: Record<string, string> = {};
  beforeEach(() => {
    delete env.TSTRITON_FIXTURE_FAIL_START;
  });

  it('backs off, doubling the delay, while the worker keeps failing at startup, and fails batches meanwhile', async () => {
    const instance = await startWorker({ options: { env, restartDelayMs: 20, maxRestartDelayMs: 40 }, module: LIFECYCLE });
    const events: HealthEvent[] = [];
    const recovered = new Promise<void>((resolve) => {
      instance.onHealthChange((e) => {
        events.push(e);
        if (e.retryInMs === 40 && events.filter((x) => x.retryInMs === 40).length === 2) delete env.TSTRITON_FIXTURE_FAIL_START;
        if (e.healthy) resolve();
      });
    });
    env.TSTRITON_FIXTURE_FAIL_START = 'disk full';
    await expect(instance.execute([act('exit')])).rejects.toThrow(/instance m_0: the worker thread exited with code 2/);
    let recoveringInBackoff: boolean | undefined;
    const duringBackoff = new Promise<unknown>((resolve) => {
      const off = instance.onHealthChange((e) => {
        if (e.retryInMs !== 20) return;
        off();
        recoveringInBackoff = instance.recovering;
        resolve(instance.execute([req()]).catch((err: unknown) => err));
      });
    });
    const rejected = await duringBackoff;
    // Backing off after repeated failures, it has given up for now: its model turns not ready.
    expect(recoveringInBackoff).toBe(false);
    expect(rejected).toBeInstanceOf(TritonError);
    expect((rejected as TritonError).code).toBe('UNAVAILABLE');
    expect((rejected as TritonError).message).toMatch(/^instance m_0 is restarting its worker after 2 consecutive failures \(last: instance m_0 failed to start: cannot open the model \(disk full\)\); next attempt in \d+ ms$/);
    await recovered;
    expect(events.map((e) => [e.healthy, e.retryInMs])).toEqual([
      [false, 0],
      [false, 20],
      [false, 40],
      [false, 40],
      [true, undefined],
    ]);
    expect(events[1]!.cause!.message).toBe('instance m_0 failed to start: cannot open the model (disk full)');
    expect(await instance.execute([req()])).toHaveLength(1);
  });

  it('stops restarting after an UnrecoverableError at startup and fails batches with it', async () => {
    const instance = await startWorker({ options: { env }, module: LIFECYCLE });
    const failed = nextUnrecoverable(instance);
    env.TSTRITON_FIXTURE_FAIL_START = 'unrecoverable';
    await expect(instance.execute([act('exit')])).rejects.toThrow(/exited with code 2/);
    await failed;
    await expect(instance.execute([req()])).rejects.toBeInstanceOf(UnrecoverableError);
    expect(instance.healthy).toBe(false);
    expect(instance.recovering).toBe(false);
  });
});

function nextUnrecoverable(instance: Instance): Promise<void> {
  return new Promise((resolve) => {
    const off = instance.onHealthChange!((e) => {
      if (!(e.cause instanceof UnrecoverableError)) return;
      off();
      resolve();
    });
  });
}
