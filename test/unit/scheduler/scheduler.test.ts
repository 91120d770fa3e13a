import type { Request, Response } from '../../../lib/callable/callable';
import { Cancellation, CANCELLATION, type Cancellable } from '../../../lib/base/cancellation';
import { TritonError } from '../../../lib/base/errors';
import type { Instance } from '../../../lib/instances/instance';
import { BatchNotStarted } from '../../../lib/instances/instance-errors';
import { Scheduler, type SchedulerOptions } from '../../../lib/scheduler/scheduler';

/** An instance whose executions finish when the test says so, recording each batch's request ids. */
class GatedInstance implements Instance {
  readonly device = { kind: 'cpu' as const, id: 0 };
  /** Set by tests that take the instance out of service, as a worker's crash and restart do. */
  healthy = true;
  recovering = false;
  async start(): Promise<void> {}
  readonly batches: string[][] = [];
  private gates: (() => void)[] = [];
  constructor(readonly name: string) {}
  execute(requests: Request[]): Promise<Response[]> {
    this.batches.push(requests.map((r) => r.id));
    return new Promise((resolve) => this.gates.push(() => resolve(requests.map((r) => ({ id: { shape: [1], data: [r.id] } })))));
  }
  release(): void {
    this.gates.shift()?.();
  }
  async close(): Promise<void> {}
}

/** A GatedInstance that accepts one batch beyond the one it runs, as a worker instance does. */
class PrefetchingInstance extends GatedInstance {
  readonly prefetch = 1;
  private rejects: ((err: Error) => void)[] = [];
  override execute(requests: Request[]): Promise<Response[]> {
    const done = super.execute(requests);
    return new Promise((resolve, reject) => {
      this.rejects.push(reject);
      done.then(resolve, reject);
    });
  }
  /** Fails the oldest batch as a crash does, and every other accepted batch as never started. */
  crash(): void {
    const [running, ...waiting] = this.rejects.splice(0);
    running?.(new Error('worker crashed'));
    for (const r of waiting) r(new BatchNotStarted(this.name, new Error('worker crashed')));
  }
}

function req(id: string, cancellation = new Cancellation()): Request & Cancellable {
  return {
    inputs: {},
    parameters: {},
    requestedOutputs: [],
    id,
    [CANCELLATION]: cancellation,
    get signal() {
      return cancellation.signal;
    },
  };
}

const options = (o: Partial<SchedulerOptions> = {}): SchedulerOptions => ({
  maxBatchSize: 8,
  dynamicBatching: true,
  maxQueueDelayMicroseconds: 0,
  preferredBatchSize: [],
  ...o,
});

const tick = () => new Promise((r) => setImmediate(r));

describe('Scheduler', () => {
  it('runs a request at the end of its turn of the event loop and batches what queued while the instance was busy', async () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options());
    const all = [s.enqueue(req('a'), 1, 'k')];
    expect(inst.batches).toEqual([]);
    await tick();
    expect(inst.batches).toEqual([['a']]);
    all.push(...['b', 'c', 'd'].map((id) => s.enqueue(req(id), 1, 'k')));
    inst.release();
    await tick();
    expect(inst.batches).toEqual([['a'], ['b', 'c', 'd']]);
    inst.release();
    const responses = await Promise.all(all);
    expect(responses.map((r) => (r.value.id!.data as string[])[0])).toEqual(['a', 'b', 'c', 'd']);
    expect(responses.map((r) => r.batchRows)).toEqual([1, 3, 3, 3]);
  });

  it('gathers the requests of one turn of the event loop into one batch, with no timer', async () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options());
    const all = ['a', 'b', 'c'].map((id) => s.enqueue(req(id), 1, 'k'));
    expect(inst.batches).toEqual([]);
    await tick();
    expect(inst.batches).toEqual([['a', 'b', 'c']]);
    inst.release();
    expect((await Promise.all(all)).map((r) => r.batchRows)).toEqual([3, 3, 3]);
  });

  it('runs a full batch at once, without waiting for the end of the turn', () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options({ maxBatchSize: 3 }));
    for (const id of ['a', 'b', 'c', 'd']) void s.enqueue(req(id), 1, 'k');
    expect(inst.batches).toEqual([['a', 'b', 'c']]);
    expect(s.pendingCount).toBe(1);
  });

  it('never exceeds maxBatchSize rows and keeps incompatible shapes apart', async () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options({ maxBatchSize: 4 }));
    const p = [s.enqueue(req('first'), 1, 'k')];
    await tick();
    p.push(s.enqueue(req('r3'), 3, 'k'), s.enqueue(req('r2'), 2, 'k'), s.enqueue(req('other'), 1, 'k2'), s.enqueue(req('r1'), 1, 'k'));
    for (let i = 0; i < 5; i++) {
      inst.release();
      await tick();
    }
    await Promise.all(p);
    expect(inst.batches).toEqual([['first'], ['r3'], ['r2'], ['other'], ['r1']]);
  });

  it('spreads work over idle instances', async () => {
    const a = new GatedInstance('a');
    const b = new GatedInstance('b');
    const s = new Scheduler([a, b], options());
    const p = [s.enqueue(req('1'), 1, 'k')];
    await tick();
    p.push(s.enqueue(req('2'), 1, 'k'), s.enqueue(req('3'), 1, 'k'));
    await tick();
    expect([a.batches, b.batches]).toEqual([[['1']], [['2', '3']]]);
    a.release();
    b.release();
    await tick();
    a.release();
    b.release();
    await Promise.all(p);
    expect([...a.batches, ...b.batches].flat().sort()).toEqual(['1', '2', '3']);
  });

  it('runs one request per execution without a dynamic batcher', async () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options({ dynamicBatching: false }));
    const p = ['a', 'b', 'c'].map((id) => s.enqueue(req(id), 1, 'k'));
    for (let i = 0; i < 3; i++) {
      inst.release();
      await tick();
    }
    await Promise.all(p);
    expect(inst.batches).toEqual([['a'], ['b'], ['c']]);
  });

  it('rejects beyond maxQueueSize with UNAVAILABLE', async () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options({ defaultQueuePolicy: { maxQueueSize: 1 } }));
    const running = s.enqueue(req('running'), 1, 'k');
    await tick();
    const queued = s.enqueue(req('queued'), 1, 'k');
    await expect(s.enqueue(req('excess'), 1, 'k')).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'Exceeds maximum queue size' });
    inst.release();
    await tick();
    inst.release();
    await Promise.all([running, queued]);
  });

  it('waits up to maxQueueDelay for a fuller batch, then cuts it', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options({ maxQueueDelayMicroseconds: 20_000, maxBatchSize: 3 }));
    const p1 = s.enqueue(req('a'), 1, 'k');
    expect(inst.batches).toEqual([]);
    const p2 = s.enqueue(req('b'), 1, 'k');
    expect(inst.batches).toEqual([]);
    const p3 = s.enqueue(req('c'), 1, 'k');
    expect(inst.batches).toEqual([['a', 'b', 'c']]); // full: no wait
    inst.release();
    const p4 = s.enqueue(req('d'), 1, 'k');
    await Promise.all([p1, p2, p3]);
    expect(inst.batches.length).toBe(1);
    jest.advanceTimersByTime(19);
    expect(inst.batches.length).toBe(1);
    jest.advanceTimersByTime(2); // the delay expires and the partial batch is cut
    expect(inst.batches).toEqual([['a', 'b', 'c'], ['d']]);
    inst.release();
    await p4;
    jest.useRealTimers();
  });

  it("times a request out of the queue on a timer of the queue's own when nothing else keeps the request's timer", async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options({ defaultQueuePolicy: { defaultTimeoutMicroseconds: 20_000 } }));
    const running = s.enqueue(req('running'), 1, 'k');
    await tick();
    // Taken before its timeout: its timer went with it.
    expect(jest.getTimerCount()).toBe(0);
    const late = s.enqueue(req('late'), 1, 'k').catch((e: unknown) => e);
    expect(jest.getTimerCount()).toBe(1);
    jest.advanceTimersByTime(20);
    expect(await late).toMatchObject({ code: 'UNAVAILABLE', message: 'Request timeout expired' });
    expect(s.pendingCount).toBe(0);
    inst.release();
    await running;
    expect(inst.batches).toEqual([['running']]);
    jest.useRealTimers();
  });

  it('removes a cancelled request from the queue and fails it', async () => {
    const inst = new GatedInstance('i0');
    const s = new Scheduler([inst], options());
    const running = s.enqueue(req('running'), 1, 'k');
    await tick();
    const cancellation = new Cancellation();
    const cancelled = s.enqueue(req('gone', cancellation), 1, 'k');
    expect(s.pendingCount).toBe(1);
    cancellation.abort();
    await expect(cancelled).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(s.pendingCount).toBe(0);
    inst.release();
    await running;
    expect(inst.batches).toEqual([['running']]);
  });

  it('fails the whole batch when the instance throws, and keeps serving', async () => {
    let fail = true;
    const inst: Instance = {
      name: 'x',
      device: { kind: 'cpu', id: 0 },
      healthy: true,
      start: async () => {},
      execute: async (rs) => {
        if (fail) throw new Error('boom');
        return rs.map(() => ({}));
      },
      close: async () => {},
    };
    const s = new Scheduler([inst], options());
    await expect(s.enqueue(req('a'), 1, 'k')).rejects.toMatchObject({ code: 'INFERENCE_FAILED', message: 'boom' });
    fail = false;
    await expect(s.enqueue(req('b'), 1, 'k')).resolves.toMatchObject({ value: {} });
  });

  describe('prefetching instances', () => {
    it('hands a busy instance the next batch when batching is off, so it starts without a round trip', async () => {
      const inst = new PrefetchingInstance('w');
      const s = new Scheduler([inst], options({ maxBatchSize: 0, dynamicBatching: false }));
      const p = ['a', 'b', 'c'].map((id) => s.enqueue(req(id), 1, 'k'));
      // One running, one waiting inside the instance; the third stays queued.
      expect(inst.batches).toEqual([['a'], ['b']]);
      inst.release();
      await tick();
      expect(inst.batches).toEqual([['a'], ['b'], ['c']]);
      inst.release();
      inst.release();
      expect((await Promise.all(p)).map((r) => (r.value.id!.data as string[])[0])).toEqual(['a', 'b', 'c']);
    });

    it('keeps a partial batch queued while the instance is busy, so it can still grow, and hands over a full one', async () => {
      const inst = new PrefetchingInstance('w');
      const s = new Scheduler([inst], options({ maxBatchSize: 3 }));
      const p = [s.enqueue(req('a'), 1, 'k')];
      await tick();
      p.push(s.enqueue(req('b'), 1, 'k'), s.enqueue(req('c'), 1, 'k'));
      expect(inst.batches).toEqual([['a']]);
      p.push(s.enqueue(req('d'), 1, 'k'));
      expect(inst.batches).toEqual([['a'], ['b', 'c', 'd']]);
      p.push(s.enqueue(req('e'), 1, 'k'));
      expect(inst.batches).toHaveLength(2);
      for (let i = 0; i < 3; i++) {
        inst.release();
        await tick();
      }
      await Promise.all(p);
      expect(inst.batches).toEqual([['a'], ['b', 'c', 'd'], ['e']]);
    });

    it('fails only the running batch when the instance crashes and runs the waiting one again', async () => {
      const inst = new PrefetchingInstance('w');
      const s = new Scheduler([inst], options({ maxBatchSize: 0, dynamicBatching: false, preserveOrdering: true }));
      const a = s.enqueue(req('a'), 1, 'k');
      const b = s.enqueue(req('b'), 1, 'k');
      expect(inst.batches).toEqual([['a'], ['b']]);
      inst.crash();
      await expect(a).rejects.toThrow('worker crashed');
      await tick();
      // 'b' went back to the queue and to the instance again.
      expect(inst.batches).toEqual([['a'], ['b'], ['b']]);
      const c = s.enqueue(req('c'), 1, 'k');
      inst.release(); // the crashed 'a'
      inst.release(); // the abandoned first 'b'
      inst.release(); // 'b' again
      await tick();
      inst.release(); // 'c'
      expect((await b).value.id!.data).toEqual(['b']);
      expect((await c).value.id!.data).toEqual(['c']);
    });
  });

  describe('instances out of service', () => {
    const gaveUp = { outOfService: () => new TritonError('MODEL_NOT_READY', 'the instance gave up') };
    const down = (inst: GatedInstance, recovering: boolean) => {
      inst.healthy = false;
      inst.recovering = recovering;
    };

    it('keeps requests queued while the only instance restarts after a crash, and runs them once it is back', async () => {
      const inst = new GatedInstance('w');
      down(inst, true);
      const s = new Scheduler([inst], options(), undefined, gaveUp);
      const p = [s.enqueue(req('a'), 1, 'k'), s.enqueue(req('b'), 1, 'k')];
      // A health change that leaves it restarting changes nothing.
      s.wake();
      await tick();
      expect(inst.batches).toEqual([]);
      expect(s.pendingCount).toBe(2);
      inst.healthy = true;
      inst.recovering = false;
      s.wake();
      expect(inst.batches).toEqual([['a', 'b']]);
      inst.release();
      expect((await Promise.all(p)).map((r) => (r.value.id!.data as string[])[0])).toEqual(['a', 'b']);
    });

    it('fails what is queued once no instance is healthy or coming back, with the error the hook gives', async () => {
      const inst = new GatedInstance('w');
      down(inst, true);
      const s = new Scheduler([inst], options(), undefined, gaveUp);
      const p = [s.enqueue(req('a'), 1, 'k'), s.enqueue(req('b'), 1, 'k')];
      inst.recovering = false;
      s.wake();
      for (const r of p) await expect(r).rejects.toMatchObject({ code: 'MODEL_NOT_READY', message: 'the instance gave up' });
      expect(s.outstanding).toBe(0);

      // Without the hook: UNAVAILABLE, saying why.
      const bare = new Scheduler([inst], options());
      await expect(bare.enqueue(req('c'), 1, 'k')).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: 'no instance can run the request: every instance failed and none is restarting',
      });
    });

    it('keeps requests queued for a busy healthy instance while another one is out of service', async () => {
      const busy = new GatedInstance('a');
      const gone = new GatedInstance('b');
      down(gone, false);
      const s = new Scheduler([busy, gone], options({ maxBatchSize: 0, dynamicBatching: false }), undefined, gaveUp);
      const first = s.enqueue(req('1'), 1, 'k');
      const second = s.enqueue(req('2'), 1, 'k');
      s.wake();
      expect(s.pendingCount).toBe(1);
      busy.release();
      await tick();
      expect(busy.batches).toEqual([['1'], ['2']]);
      busy.release();
      await expect(Promise.all([first, second])).resolves.toHaveLength(2);
      expect(gone.batches).toEqual([]);
    });

    it('fails a batch handed back unstarted when its instance has given up meanwhile', async () => {
      const inst = new PrefetchingInstance('w');
      const s = new Scheduler([inst], options({ maxBatchSize: 0, dynamicBatching: false }), undefined, gaveUp);
      const a = s.enqueue(req('a'), 1, 'k');
      const b = s.enqueue(req('b'), 1, 'k');
      expect(inst.batches).toEqual([['a'], ['b']]);
      // A worker announces its state before it fails its batches: 'b' comes back to a queue no instance takes.
      down(inst, false);
      s.wake();
      inst.crash();
      await expect(a).rejects.toThrow('worker crashed');
      await expect(b).rejects.toMatchObject({ code: 'MODEL_NOT_READY', message: 'the instance gave up' });
      expect(s.outstanding).toBe(0);
    });
  });
});
