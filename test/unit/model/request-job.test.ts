import type { Request, Response } from '../../../lib/callable/callable';
import { Cancellation } from '../../../lib/base/cancellation';
import { ModelConfig, type DynamicBatcherInit } from '../../../lib/config/model-config';
import { nameSpecs } from '../../../lib/config/tensor-spec';
import { InProcessInstance } from '../../../lib/instances/in-process-instance';
import type { InferenceRequest } from '../../../lib/model/inference';
import { Model } from '../../../lib/model/model';

// A request's `timeout` (or its transport's deadline) and its queue policy's timeout run on one timer, the
// request's own (RequestJob's): the queue arms none for it. With Jest's fake timers, `jest.getTimerCount()` counts
// the timers armed (setImmediate, which the scheduler gathers a turn's requests with, is left real).

const tick = () => new Promise((r) => setImmediate(r));

/** A model whose one instance holds each batch until `release()`; `ran` lists the request ids it ran. */
class HeldModel {
  readonly ran: string[] = [];
  readonly signals: AbortSignal[] = [];
  private releases: (() => void)[] = [];
  readonly model: Model;

  constructor(batcher: DynamicBatcherInit, maxBatchSize = 8) {
    const callable = async (requests: Request[]): Promise<Response[]> => {
      for (const r of requests) {
        this.ran.push(r.id);
        this.signals.push(r.signal);
      }
      await new Promise<void>((resolve) => this.releases.push(resolve));
      return requests.map((r) => ({ y: r.inputs.x as Response[string] }));
    };
    this.model = new Model({
      name: 'm',
      version: '1',
      inputs: nameSpecs([{ name: 'x', dtype: 'FP32', shape: [1] }], 'INPUT'),
      outputs: nameSpecs([{ name: 'y', dtype: 'FP32', shape: [1] }], 'OUTPUT'),
      config: new ModelConfig({ maxBatchSize, batcher }),
      instances: [new InProcessInstance('m_0', { kind: 'cpu', id: 0 }, callable, 'm')],
      strict: false,
    });
  }

  infer(id: string, fields: Partial<InferenceRequest> = {}) {
    const request: InferenceRequest = {
      modelName: 'm',
      id,
      inputs: [{ name: 'x', tensor: { dtype: 'FP32', shape: [1, 1], data: Float32Array.of(1) } }],
      parameters: {},
      cancellation: new Cancellation(),
      ...fields,
    };
    return this.model.infer(request);
  }

  /** Resolves once the instance runs request `id`. */
  async running(id: string): Promise<void> {
    while (!this.ran.includes(id)) await tick();
  }

  release(): void {
    this.releases.shift()?.();
  }

  get failures() {
    return this.model.statistics.failures;
  }
}

let h: HeldModel;

beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
afterEach(async () => {
  jest.useRealTimers();
  for (let i = 0; i < 4; i++) h.release();
  await h.model.unload(0);
});

async function start(batcher: DynamicBatcherInit, maxBatchSize?: number): Promise<void> {
  h = new HeldModel(batcher, maxBatchSize);
  await h.model.load();
}

describe('RequestJob: one timer per request', () => {
  it("a `timeout` that overrides the queue policy arms one timer, and the queued request fails with Triton's queue timeout error", async () => {
    await start({ defaultQueuePolicy: { allowTimeoutOverride: true } });
    const first = h.infer('first');
    await h.running('first');
    const late = h.infer('late', { timeoutMicroseconds: 30_000 }).catch((e: unknown) => e);
    expect(h.model.scheduler.pendingCount).toBe(1);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(29);
    expect(h.model.scheduler.pendingCount).toBe(1);
    jest.advanceTimersByTime(1);
    expect(await late).toMatchObject({ code: 'UNAVAILABLE', message: 'Request timeout expired' });
    expect(h.model.scheduler.pendingCount).toBe(0);
    expect(h.failures).toEqual({ REJECTED: 1, CANCELED: 0, BACKEND: 0, OTHER: 0 });
    h.release();
    await first;
    expect(h.ran).toEqual(['first']);
    expect(h.model.statistics.success.count).toBe(1);
    expect(h.model.statistics.fail.count).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
  });

  it("the queue policy's timeout and a later deadline share one timer: the queue's REJECT at its timeout", async () => {
    await start({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 20_000 } });
    const first = h.infer('first');
    await h.running('first');
    const late = h.infer('late', { timeoutMicroseconds: 100_000 }).catch((e: unknown) => e);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(20);
    expect(await late).toMatchObject({ code: 'UNAVAILABLE', message: 'Request timeout expired' });
    expect(h.failures.REJECTED).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
    h.release();
    await first;
    expect(h.ran).toEqual(['first']);
  });

  it('a deadline before the queue timeout ends the queued request first, on the one timer', async () => {
    await start({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 100_000, timeoutAction: 'DELAY' } });
    const first = h.infer('first');
    await h.running('first');
    const late = h.infer('late', { deadline: Date.now() + 20 }).catch((e: unknown) => e);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(20);
    expect(await late).toMatchObject({ code: 'UNAVAILABLE', message: 'Request timeout expired' });
    expect(h.failures.REJECTED).toBe(1);
    h.release();
    await first;
  });

  it('under DELAY, the request waits on past its queue timeout and its deadline still ends it, one timer throughout', async () => {
    await start({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 20_000, timeoutAction: 'DELAY' } }, 1);
    const first = h.infer('first');
    await h.running('first');
    const delayed = h.infer('delayed', { timeoutMicroseconds: 100_000 }).catch((e: unknown) => e);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(20);
    await tick();
    // Delayed, not failed: it still waits, and its deadline is what its timer waits for now.
    expect(h.model.scheduler.pendingCount).toBe(1);
    expect(h.model.liveRequests).toBe(2);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(80);
    expect(await delayed).toMatchObject({ code: 'UNAVAILABLE', message: 'Request timeout expired' });
    expect(h.failures).toEqual({ REJECTED: 1, CANCELED: 0, BACKEND: 0, OTHER: 0 });
    h.release();
    await first;
    expect(h.ran).toEqual(['first']);
  });

  it('under DELAY, a delayed request runs after the others of its level', async () => {
    await start({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 20_000, timeoutAction: 'DELAY' } }, 1);
    const first = h.infer('first');
    await h.running('first');
    const delayed = h.infer('delayed', { timeoutMicroseconds: 100_000 });
    jest.advanceTimersByTime(20);
    const fresh = h.infer('fresh');
    h.release();
    while (h.ran.length < 2) await tick();
    h.release();
    while (h.ran.length < 3) await tick();
    h.release();
    await Promise.all([first, delayed, fresh]);
    expect(h.ran).toEqual(['first', 'fresh', 'delayed']);
    expect(h.model.statistics.success.count).toBe(3);
    expect(h.model.statistics.queue.count).toBe(3);
    expect(h.model.statistics.queue.ns).toBeGreaterThanOrEqual(20e6); // the delayed request's wait, at least
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a request that left the queue is not timed out by its queue policy; its deadline still ends it while it runs', async () => {
    await start({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 20_000 } });
    const running = h.infer('running', { timeoutMicroseconds: 50_000 }).catch((e: unknown) => e);
    await h.running('running');
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(20);
    await tick();
    expect(h.signals[0]?.aborted).toBe(false);
    expect(h.model.liveRequests).toBe(1);
    jest.advanceTimersByTime(30);
    expect(await running).toMatchObject({ code: 'DEADLINE_EXCEEDED', message: '[request id: running] Request timeout expired after 50 ms' });
    expect(h.signals[0]?.aborted).toBe(true);
    expect(h.signals[0]?.reason).toMatchObject({ code: 'UNAVAILABLE', message: 'Request timeout expired' });
    expect(h.failures).toEqual({ REJECTED: 0, CANCELED: 0, BACKEND: 0, OTHER: 1 });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('a cancelled queued request leaves the queue at once, and its timer goes with it', async () => {
    await start({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 20_000, allowTimeoutOverride: true } });
    const first = h.infer('first');
    await h.running('first');
    const cancellation = new Cancellation();
    const gone = h.infer('gone', { timeoutMicroseconds: 10_000, cancellation }).catch((e: unknown) => e);
    expect(jest.getTimerCount()).toBe(1);
    cancellation.abort();
    expect(await gone).toMatchObject({ code: 'CANCELLED' });
    expect(h.model.scheduler.pendingCount).toBe(0);
    expect(h.failures.CANCELED).toBe(1);
    expect(jest.getTimerCount()).toBe(0);
    h.release();
    await first;
    expect(h.ran).toEqual(['first']);
  });
});

