/**
 * The load driver every benchmark's load generator runs: `concurrency` lanes, each with one request in flight
 * at a time, sending again as soon as its answer is in (closed loop) or when a fixed rate says so (open loop).
 * A transport carries the requests (raw HTTP/1.1 sockets, one grpc-js channel); the driver times them, counts
 * the failures, and measures its own CPU over the window.
 *
 * - Closed loop (no `rate`): `concurrency` requests always in flight.
 * - Open loop (`rate`): requests are started at `rate` per second (in 1 ms ticks) on idle lanes; at most
 *   `concurrency` are in flight, and a request due while all of them are busy is skipped (and counted).
 * - Windows: a time window (`warmupMs`, then `durationMs`), or a count window (`warmupCount` responses, then
 *   `count` responses timed from the last warm-up response), for slow requests whose throughput a fixed
 *   window would round.
 * - Several requests: each lane sends them in turn, and the latencies of each are also reported apart
 *   (`byRequest`), so that variants are compared request by request under the same conditions.
 *
 * At the end of a window nothing more is sent and the requests in flight are awaited, so that the server is
 * idle when the next measurement starts. Requests still unanswered at `capMs` are dropped and counted as late.
 */
import { performance } from 'node:perf_hooks';
import { latencyStats, type LatencyStats } from './stats';

/** How to load: the lanes, the loop and the window. */
export interface LoadPlan {
  /** Closed loop: the requests in flight. Open loop: the most in flight. */
  concurrency: number;
  /** Open loop: requests started per second. */
  rate?: number;
  warmupMs?: number;
  durationMs?: number;
  warmupCount?: number;
  count?: number;
  /** Hard stop, whatever the window (default: the window + 10 s, or 120 s for a count window). */
  capMs?: number;
}

/** What one load measured: the latencies of the good responses in the window, and around them. */
export interface LoadResult extends LatencyStats {
  /** Failed requests and lost lanes (warm-up included), and the first failure's description. */
  errors: number;
  firstError?: string;
  /** Length of the window. */
  elapsedMs: number;
  /** CPU the load generator used in the window, as a share of one core. */
  clientCpu: number;
  /** Open loop: requests due in the window, and those skipped because every lane was busy. */
  offered: number;
  skipped: number;
  /** Requests still unanswered at the cap (then dropped). */
  late: number;
  /** With several requests: the responses and latencies of each, in the order of the transport's requests. */
  byRequest?: LatencyStats[];
}

/** What a lane tells the driver. */
export interface LaneEvents {
  /** The lane can take its first request (called after `open` has returned). */
  ready(): void;
  /** The whole answer to the request in flight is in; `problem` says what was wrong with it, if anything. */
  answered(problem?: string): void;
  /** The lane is gone, with its request in flight; the driver opens another in its place. */
  lost(why: string): void;
}

/** One request in flight at a time. */
export interface Lane {
  /** Sends request `index` of the transport's requests. */
  send(index: number): void;
  close(): void;
}

/** What carries the requests: a connection per lane, or one channel the lanes share. */
export interface Transport {
  /** How many different requests there are; each lane sends them in turn. */
  readonly requests: number;
  open(events: LaneEvents): Lane;
  /** Releases what the lanes share, once every lane is closed. */
  close(): void;
}

interface LaneState {
  lane: Lane;
  ready: boolean;
  busy: boolean;
  closed: boolean;
  sentAt: number;
  /** How many requests this lane has sent (which of the requests is in flight). */
  sent: number;
}

/** Runs one load as planned and resolves with what was measured. */
export function drive(plan: LoadPlan, transport: Transport): Promise<LoadResult> {
  const n = transport.requests;
  const latenciesBy: number[][] = Array.from({ length: n }, () => []);
  const countMode = plan.count !== undefined;
  const openLoop = plan.rate !== undefined;
  let phase: 'warmup' | 'measure' | 'draining' = 'warmup';
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let warmupDone = 0;
  let windowStart = 0;
  let windowEnd = 0;
  let cpuStart = process.cpuUsage();
  let cpuUsed: NodeJS.CpuUsage | undefined;
  let offered = 0;
  let skipped = 0;
  let late = 0;
  const lanes: LaneState[] = [];

  const fail = (what: string) => {
    errors++;
    firstError ??= what;
  };

  return new Promise((resolve) => {
    let finished = false;
    let ticker: NodeJS.Timeout | undefined;
    const timers: NodeJS.Timeout[] = [];

    const finish = () => {
      if (finished) return;
      finished = true;
      clearInterval(ticker);
      for (const t of timers) clearTimeout(t);
      for (const s of lanes) {
        s.closed = true;
        s.lane.close();
      }
      transport.close();
      if (windowEnd === 0) windowEnd = performance.now();
      const cpu = cpuUsed ?? process.cpuUsage(cpuStart);
      const elapsedMs = windowStart > 0 ? windowEnd - windowStart : 0;
      resolve({
        ...latencyStats(latencies),
        errors,
        firstError,
        elapsedMs,
        clientCpu: elapsedMs > 0 ? (cpu.user + cpu.system) / 1000 / elapsedMs : NaN,
        offered,
        skipped,
        late,
        byRequest: n > 1 ? latenciesBy.map(latencyStats) : undefined,
      });
    };

    const startWindow = () => {
      phase = 'measure';
      windowStart = performance.now();
      cpuStart = process.cpuUsage();
      if (openLoop) offered = skipped = 0;
      if (!countMode) timers.push(setTimeout(endWindow, plan.durationMs ?? 1000));
    };

    const endWindow = () => {
      if (phase !== 'measure') return;
      phase = 'draining';
      windowEnd = performance.now();
      cpuUsed = process.cpuUsage(cpuStart);
      clearInterval(ticker);
      maybeDrained();
    };

    const maybeDrained = () => {
      if (phase === 'draining' && lanes.every((s) => !s.busy || s.closed)) finish();
    };

    const send = (s: LaneState) => {
      s.busy = true;
      s.sentAt = performance.now();
      s.lane.send(s.sent++ % n);
    };

    const answered = (s: LaneState, problem: string | undefined) => {
      const now = performance.now();
      if (finished || s.closed) return;
      s.busy = false;
      if (problem !== undefined) fail(problem);
      else if (phase === 'measure') {
        const us = (now - s.sentAt) * 1000;
        latencies.push(us);
        latenciesBy[(s.sent - 1) % n]?.push(us);
      } else if (phase === 'warmup' && countMode && ++warmupDone >= (plan.warmupCount ?? 0)) startWindow();
      if (phase === 'measure' && countMode && latencies.length >= (plan.count as number)) endWindow();
      if (phase === 'draining') return maybeDrained();
      if (!openLoop) send(s);
    };

    const open = (): LaneState => {
      const s: LaneState = {
        lane: transport.open({
          ready: () => {
            s.ready = true;
            if (!openLoop && !finished && !s.closed && phase !== 'draining') send(s);
          },
          answered: (problem) => answered(s, problem),
          lost: (why) => {
            if (s.closed) return;
            s.closed = true;
            if (!finished) fail(why);
            s.lane.close();
            if (finished) return;
            // Replace the lane, so the load keeps its shape.
            const i = lanes.indexOf(s);
            if (phase !== 'draining' && i >= 0) lanes[i] = open();
            else maybeDrained();
          },
        }),
        ready: false,
        busy: false,
        closed: false,
        sentAt: 0,
        sent: 0,
      };
      return s;
    };

    for (let i = 0; i < plan.concurrency; i++) lanes.push(open());

    if (openLoop) {
      const rate = plan.rate as number;
      const t0 = performance.now();
      let due = 0;
      ticker = setInterval(() => {
        const shouldHave = Math.floor(((performance.now() - t0) * rate) / 1000);
        while (due < shouldHave) {
          due++;
          if (phase === 'measure') offered++;
          const idle = lanes.find((s) => s.ready && !s.busy && !s.closed);
          if (!idle) {
            if (phase === 'measure') skipped++;
            continue;
          }
          send(idle);
        }
      }, 1);
    }
    if (!countMode) timers.push(setTimeout(startWindow, plan.warmupMs ?? 0));
    else if ((plan.warmupCount ?? 0) === 0) startWindow();
    const cap = plan.capMs ?? (countMode ? 120_000 : (plan.warmupMs ?? 0) + (plan.durationMs ?? 1000) + 10_000);
    timers.push(
      setTimeout(() => {
        late = lanes.filter((s) => s.busy && !s.closed).length;
        // A window that never closed measured nothing that can be reported.
        if (phase !== 'draining') fail(`stopped after ${cap} ms with requests still in flight (phase ${phase})`);
        if (phase === 'measure') endWindow();
        finish();
      }, cap),
    );
  });
}
