import { getHeapStatistics } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { IdleCollection, type CollectableHeap } from '../../../lib/server/idle-collection';

const MB = 1024 * 1024;

/** A heap whose figures the test sets look by look, and which a collection leaves at `after`. */
class FakeHeap implements CollectableHeap {
  used = 20 * MB;
  committed = 30 * MB;
  /** The thread's CPU time (µs); undefined as on a Node that does not tell it. */
  cpuMicros: number | undefined;
  /** The thread's requests in flight. */
  inFlight = 0;
  collections = 0;
  after = { used: 18 * MB, committed: 25 * MB };
  available = true;

  stats() {
    return { used: this.used, committed: this.committed, cpuMicros: this.cpuMicros };
  }

  async collect(): Promise<boolean> {
    if (!this.available) return false;
    this.collections++;
    this.used = this.after.used;
    this.committed = this.after.committed;
    return true;
  }
}

/** One look at the heap: what it shows (MB), and whether the look collects. */
type Look = [used: number, committed: number, collects: boolean];

/** Starts a collection with a threshold of 64 MB on a heap at 20 MB used, 30 MB committed, then takes `looks`. */
async function run(looks: Look[], heap = new FakeHeap()): Promise<boolean[]> {
  const collection = new IdleCollection(64 * MB, () => heap.inFlight, heap, 1);
  collection.start();
  collection.stop();
  const out: boolean[] = [];
  for (const [used, committed] of looks) {
    heap.used = used * MB;
    heap.committed = committed * MB;
    out.push(await collection.check());
  }
  return out;
}

describe('IdleCollection', () => {
  it.each<[string, Look[]]>([
    ['collects on the first quiet look after a burst that grew the heap past the threshold', [
      [200, 300, false],
      [500, 600, false],
      [500, 600, true],
    ]],
    ['does not collect while the thread keeps allocating, however large its heap', [
      [200, 300, false],
      [400, 600, false],
      [600, 600, false],
      [100, 600, false],
    ]],
    ['does not collect after work that left the heap within the threshold', [
      [60, 80, false],
      [60, 80, false],
    ]],
    ['counts the peak: a collection V8 ran during the burst shrank the heap and pooled its pages', [
      [300, 500, false],
      [40, 90, false],
      [40, 90, true],
    ]],
    ['collects once per burst: a thread that stays quiet is left alone until it works again', [
      [300, 500, false],
      [300, 500, true],
      [18, 25, false],
      [18, 25, false],
      [200, 400, false],
      [200, 400, true],
    ]],
    ['does not collect a heap that grew while every look found it quiet (no burst to clear up)', [
      [20.5, 100, false],
      [21, 100, false],
    ]],
  ])('%s', async (_name, looks) => {
    expect(await run(looks)).toEqual(looks.map(([, , collects]) => collects));
  });

  it('measures growth from the idle size, not from a collection that found the thread still holding a burst', async () => {
    const heap = new FakeHeap();
    const collection = new IdleCollection(64 * MB, () => heap.inFlight, heap, 1);
    collection.start();
    collection.stop();
    // A quiet moment in the middle of a flood: the collection leaves 80 MB held by requests in flight.
    heap.after = { used: 70 * MB, committed: 80 * MB };
    Object.assign(heap, { used: 200 * MB, committed: 300 * MB });
    await collection.check();
    expect(await collection.check()).toBe(true);
    // The rest of the flood grows the heap by less than the threshold above that, then it is over.
    heap.after = { used: 18 * MB, committed: 25 * MB };
    Object.assign(heap, { used: 120 * MB, committed: 130 * MB });
    expect(await collection.check()).toBe(false);
    expect(await collection.check()).toBe(true);
    expect(heap.collections).toBe(2);
  });

  it("knows a quiet thread by its CPU time where Node tells it, whatever V8's sweepers do to the heap in use meanwhile", async () => {
    const heap = new FakeHeap();
    heap.cpuMicros = 0;
    const collection = new IdleCollection(64 * MB, () => heap.inFlight, heap, 1);
    collection.start();
    collection.stop();
    const look = (used: number, committed: number, cpuMs: number) => {
      Object.assign(heap, { used: used * MB, committed: committed * MB, cpuMicros: cpuMs * 1000 });
      return collection.check();
    };
    // Busy: 900 ms of CPU in a second, however little the heap in use moved.
    expect(await look(300, 500, 900)).toBe(false);
    expect(await look(300.5, 500, 1800)).toBe(false);
    // Quiet: 10 ms, while the heap in use fell by 50 MB (swept).
    expect(await look(250, 500, 1810)).toBe(true);
    expect(await look(18, 25, 1815)).toBe(false);
  });

  it('counts a thread with requests in flight as busy, however little it runs, and collects once they have ended', async () => {
    // A front-end thread while the core works through a backlog: a few answers a second, the heap still growing.
    const heap = new FakeHeap();
    heap.cpuMicros = 0;
    heap.inFlight = 50_000;
    const collection = new IdleCollection(64 * MB, () => heap.inFlight, heap, 1);
    collection.start();
    collection.stop();
    const look = (used: number, committed: number, cpuMs: number, inFlight: number) => {
      Object.assign(heap, { used: used * MB, committed: committed * MB, cpuMicros: cpuMs * 1000, inFlight });
      return collection.check();
    };
    expect(await look(100, 120, 30, 40_000)).toBe(false);
    expect(await look(150, 170, 60, 20_000)).toBe(false);
    expect(await look(150, 170, 90, 1)).toBe(false);
    expect(await look(150, 170, 100, 0)).toBe(true);
    expect(heap.collections).toBe(1);
  });

  it("takes a thread's idle size at the start from what it uses, not from what the start's garbage made V8 commit", async () => {
    // A new front-end thread: 14 MB used, 32 MB committed. A burst takes it to 41 MB committed, 27 MB over its idle size.
    const heap = new FakeHeap();
    Object.assign(heap, { used: 14 * MB, committed: 32 * MB });
    const collection = new IdleCollection(16 * MB, () => heap.inFlight, heap, 1);
    collection.start();
    collection.stop();
    Object.assign(heap, { used: 38 * MB, committed: 41 * MB });
    expect(await collection.check()).toBe(false);
    expect(await collection.check()).toBe(true);
  });

  it('waits for ten quiet looks in a row, and counts again from a busy one', async () => {
    const heap = new FakeHeap();
    const collection = new IdleCollection(64 * MB, () => heap.inFlight, heap);
    collection.start();
    collection.stop();
    const looks: boolean[] = [];
    const look = async (used: number, committed: number) => {
      heap.used = used * MB;
      heap.committed = committed * MB;
      looks.push(await collection.check());
    };
    await look(200, 300); // busy: the burst
    for (let i = 0; i < 5; i++) await look(200, 300); // quiet for five looks
    await look(400, 500); // busy again
    for (let i = 0; i < 10; i++) await look(400, 500);
    expect(looks.indexOf(true)).toBe(16);
    expect(looks.filter(Boolean)).toHaveLength(1);
  });

  it('stops looking where a collection cannot be run', async () => {
    const heap = new FakeHeap();
    heap.available = false;
    expect(await run([[300, 500, false], [300, 500, false]], heap)).toEqual([false, false]);
    expect(heap.collections).toBe(0);
  });

  it("collects this thread's V8 heap with V8's own gc, garbage and all, and leaves no global gc behind", async () => {
    const collection = new IdleCollection(16 * MB, () => 0, undefined, 1);
    collection.start();
    collection.stop();
    // A burst: 100 MB held for a while (so that it reaches the old generation and the heap grows), then let go.
    const burst: { held?: number[][] } = { held: Array.from({ length: 100 }, () => new Array<number>(128 * 1024).fill(1.5)) };
    expect(await collection.check()).toBe(false);
    const usedBefore = getHeapStatistics().used_heap_size;
    delete burst.held;
    expect(await collection.check()).toBe(true);
    expect(getHeapStatistics().used_heap_size).toBeLessThan(usedBefore - 50 * MB);
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });

  it('does not start for a threshold of 0', () => {
    jest.useFakeTimers();
    try {
      const collection = new IdleCollection(0, () => 0, new FakeHeap());
      collection.start();
      expect(jest.getTimerCount()).toBe(0);
      collection.stop();
    } finally {
      jest.useRealTimers();
    }
  });
});
