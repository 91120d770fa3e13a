import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A thread's heap as the idle collection reads it, and the full collection it asks for. */
export interface CollectableHeap {
  /**
   * Bytes of V8's heap in use (live objects and garbage not yet collected) and committed for it; and the CPU time
   * the thread has run so far (µs), where Node tells it (`process.threadCpuUsage`, Node 23.9 and later).
   */
  stats(): { readonly used: number; readonly committed: number; readonly cpuMicros?: number };
  /** A full, memory-reducing collection; resolves false where this Node cannot run one. */
  collect(): Promise<boolean>;
}

/** How often a thread looks at its heap. */
const CHECK_MS = 1000;
/**
 * A thread that ran less than this since the last look (5 % of the time between looks) is idle; where Node does not
 * tell a thread's CPU time, one whose heap in use moved by less than `QUIET_BYTES`.
 */
const QUIET_CPU_MICROS = 50_000;
const QUIET_BYTES = 1024 * 1024;
/**
 * Quiet looks in a row (seconds) before a collection. A full collection leaves V8's heap limits at what is live,
 * and the next burst pays for growing them again: collecting after each second of quiet, bench:cores (bursts of
 * 2.5 s, a moment apart) measured 1.3-1.9x the CPU per request; after ten, it runs only once the load has stopped.
 */
const QUIET_LOOKS = 10;

/**
 * Gives back the memory a burst of work left in one thread's heap, once the thread has gone quiet.
 *
 * V8 keeps what a burst left: the garbage stays in the heap until an allocation needs its room, and the pages a
 * full collection frees are pooled for reuse rather than returned. Its memory reducer, which should collect and
 * give them back once a thread idles, found the allocation rate "high" at every one of its checks (8 s apart) for as
 * long as the server idled on Node 24 (`--trace-memory-reducer`), and collected only on its watchdog, 100 s after
 * the last full collection (docs/threads.md, "Memory"). Meanwhile RSS stays at the burst's peak, and a
 * second burst starts from the first one's limits and climbs higher.
 *
 * Each thread of the server (the core thread and each front-end thread) runs one of these: once a second it looks
 * at its requests in flight, its CPU time and its heap. A look is busy when a request is in flight, or when the
 * thread ran 50 ms or more since the last look (where Node does not tell a thread's CPU time: when its heap in use
 * moved by 1 MiB or more); quiet otherwise. Requests in flight come first: a front-end thread waiting on a core
 * that works through a backlog runs little and allocates much. On the tenth quiet look in a row (ten seconds of
 * quiet) after a busy one, if the committed heap has reached `thresholdBytes` or more above the thread's idle size (the least a full collection
 * left it at, or what it used at the start) since the last collection, it runs one: V8's full, memory-reducing
 * collection, which also empties the pool. A steady load never looks quiet, so it is never
 * paused for this; a burst costs one collection once it is over; a thread that stays quiet is not collected again
 * until it has worked.
 */
export class IdleCollection {
  private timer: NodeJS.Timeout | undefined;
  /** `used` and the CPU time at the last look, and whether a look found the thread busy since the last collection. */
  private lastUsed = 0;
  private lastCpu: number | undefined;
  private worked = false;
  /** The thread's idle size: the least `committed` a full collection left (or `used` at the start); the most since. */
  private floor = 0;
  private peak = 0;
  private collecting = false;
  /** Quiet looks since the last busy one. */
  private quietLooks = 0;

  constructor(
    private readonly thresholdBytes: number,
    /** How many requests the thread has in flight. */
    private readonly inFlight: () => number,
    private readonly heap: CollectableHeap = v8Heap,
    /** Quiet looks in a row before a collection. */
    private readonly quietLooksNeeded = QUIET_LOOKS,
  ) {}

  /** Starts looking, once a second, without keeping the thread alive; does nothing for a threshold of 0. */
  start(): void {
    if (this.timer || this.thresholdBytes <= 0) return;
    const { used, committed, cpuMicros } = this.heap.stats();
    this.lastUsed = used;
    this.lastCpu = cpuMicros;
    // Before its first collection, a thread's idle size is what it uses: what it committed also holds the garbage
    // of its start (a new front-end thread commits twice what it uses).
    this.floor = used;
    this.peak = committed;
    this.timer = setInterval(() => void this.check(), CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look: collects on the tenth quiet one in a row after work that grew the heap past the threshold. Resolves true when it collected. */
  async check(): Promise<boolean> {
    if (this.collecting) return false;
    const { used, committed, cpuMicros } = this.heap.stats();
    const idle = cpuMicros !== undefined && this.lastCpu !== undefined ? cpuMicros - this.lastCpu < QUIET_CPU_MICROS : Math.abs(used - this.lastUsed) < QUIET_BYTES;
    const quiet = idle && this.inFlight() === 0;
    this.lastUsed = used;
    this.lastCpu = cpuMicros;
    // The peak, not the heap now: a collection during the burst may have shrunk the heap and pooled its pages.
    this.peak = Math.max(this.peak, committed);
    this.quietLooks = quiet ? this.quietLooks + 1 : 0;
    if (!quiet) this.worked = true;
    if (this.quietLooks < this.quietLooksNeeded || !this.worked || this.peak - this.floor < this.thresholdBytes) return false;
    this.collecting = true;
    try {
      if (!(await this.heap.collect())) {
        this.stop();
        return false;
      }
    } finally {
      this.collecting = false;
    }
    const after = this.heap.stats();
    this.lastUsed = after.used;
    // The collection's own time is not work.
    this.lastCpu = after.cpuMicros;
    this.worked = false;
    // A collection while the thread still held much (requests in flight) does not raise its idle size.
    this.floor = Math.min(this.floor, after.committed);
    this.peak = after.committed;
    return true;
  }
}

/** V8's `gc` function for this thread; null where this Node does not give it. */
let fullCollection: ((options: object) => unknown) | null | undefined;

/**
 * V8's own `gc` function, taken from a context made while `--expose-gc` is set, and the flag unset again, so that no
 * other context (the user's code, a worker started later) sees a global `gc`.
 */
function v8Collection(): ((options: object) => unknown) | null {
  if (fullCollection !== undefined) return fullCollection;
  try {
    setFlagsFromString('--expose-gc');
    fullCollection = runInNewContext('gc') as (options: object) => unknown;
  } catch {
    fullCollection = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return typeof fullCollection === 'function' ? fullCollection : (fullCollection = null);
}

/**
 * This thread's V8 heap, collected by V8's `gc` (`flavor: 'last-resort'`: the full, memory-reducing collection
 * that also returns the pooled pages). Not through the inspector: a thread whose inspector had run one
 * collection spent 1.3-1.7x the CPU per request afterwards (bench:cores, docs/threads.md "Memory").
 */
const v8Heap: CollectableHeap = {
  stats() {
    const s = getHeapStatistics();
    const cpu = typeof process.threadCpuUsage === 'function' ? process.threadCpuUsage() : undefined;
    return { used: s.used_heap_size, committed: s.total_heap_size, cpuMicros: cpu && cpu.user + cpu.system };
  },
  collect() {
    const gc = v8Collection();
    if (gc === null) return Promise.resolve(false);
    gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
    return Promise.resolve(true);
  },
};
