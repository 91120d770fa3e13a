/**
 * The load generator, run as its own process: keep-alive HTTP/1.1 connections on raw sockets, each sending
 * the same pre-built request bytes and reading the whole response (status line, headers, Content-Length
 * body) before it sends again. Raw sockets keep the client's cost to a few microseconds per request.
 *
 * - Closed loop (no `rate`): `connections` requests always in flight.
 * - Open loop (`rate`): requests are started at `rate` per second (in 1 ms ticks) on idle connections; at most
 *   `connections` are in flight, and a request due while all of them are busy is skipped (and counted).
 * - Windows: a time window (`warmupMs`, then `durationMs`), or a count window (`warmupCount` responses, then
 *   `count` responses timed from the last warm-up response), for slow requests whose throughput a fixed
 *   window would round.
 *
 * At the end of a window nothing more is sent and the requests in flight are awaited, so that the server is
 * idle when the next measurement starts.
 */
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';

export interface LoadSpec {
  port: number;
  /** The raw request, base64. */
  request: string;
  /**
   * More raw requests (base64): each connection then sends `request`, `alternates[0]`, ... in turn, and the
   * latencies of each are also reported apart (`byRequest`), so that variants are compared request by request
   * under the same conditions.
   */
  alternates?: string[];
  /** Closed loop: the concurrency. Open loop: the most requests in flight. */
  connections: number;
  /** Open loop: requests started per second. */
  rate?: number;
  warmupMs?: number;
  durationMs?: number;
  warmupCount?: number;
  count?: number;
  /** Hard stop, whatever the window (default: the window + 10 s, or 120 s for a count window). */
  capMs?: number;
}

export interface LoadResult {
  /** Good responses completed inside the window. */
  count: number;
  /** Non-200 responses and socket errors (warm-up included). */
  errors: number;
  firstError?: string;
  /** Length of the window. */
  elapsedMs: number;
  /** Latencies in microseconds (send to last byte) of the responses inside the window. */
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
  /** CPU the load generator used in the window, as a share of one core. */
  clientCpu: number;
  /** Open loop: requests due in the window, and those skipped because every connection was busy. */
  offered: number;
  skipped: number;
  /** With `alternates`: the responses and latencies of each request (`request` first). */
  byRequest?: { count: number; p50: number; p90: number; p99: number; mean: number }[];
}

export type LoadMessage = { type: 'run'; spec: LoadSpec } | { type: 'exit' };
export type LoadReply = { type: 'result'; result: LoadResult } | { type: 'failed'; message: string };

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

interface Conn {
  socket: net.Socket;
  busy: boolean;
  sentAt: number;
  /** How many requests this connection has sent (which of the alternating requests is in flight). */
  sent: number;
  /** Header bytes received so far, while no blank line has arrived. */
  head: Buffer | undefined;
  /** Body bytes still to read; -1 while reading a header. */
  remaining: number;
  ok: boolean;
  status: string;
  closed: boolean;
}

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const requests = [spec.request, ...(spec.alternates ?? [])].map((r) => Buffer.from(r, 'base64'));
  const latenciesBy: number[][] = requests.map(() => []);
  const countMode = spec.count !== undefined;
  const openLoop = spec.rate !== undefined;
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
  const conns: Conn[] = [];

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
      for (const c of conns) {
        c.closed = true;
        c.socket.destroy();
      }
      if (windowEnd === 0) windowEnd = performance.now();
      const cpu = cpuUsed ?? process.cpuUsage(cpuStart);
      const stats = (xs: number[]) => {
        xs.sort((a, b) => a - b);
        const pick = (q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;
        let sum = 0;
        for (const l of xs) sum += l;
        return { count: xs.length, p50: pick(0.5), p90: pick(0.9), p99: pick(0.99), mean: xs.length ? sum / xs.length : NaN };
      };
      const all = stats(latencies);
      const elapsedMs = windowStart > 0 ? windowEnd - windowStart : 0;
      resolve({
        count: latencies.length,
        errors,
        firstError,
        elapsedMs,
        p50: all.p50,
        p90: all.p90,
        p99: all.p99,
        mean: all.mean,
        max: latencies[latencies.length - 1] ?? NaN,
        clientCpu: elapsedMs > 0 ? (cpu.user + cpu.system) / 1000 / elapsedMs : NaN,
        offered,
        skipped,
        byRequest: requests.length > 1 ? latenciesBy.map(stats) : undefined,
      });
    };

    const startWindow = () => {
      phase = 'measure';
      windowStart = performance.now();
      cpuStart = process.cpuUsage();
      if (openLoop) offered = skipped = 0;
      if (!countMode) timers.push(setTimeout(endWindow, spec.durationMs ?? 1000));
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
      if (phase === 'draining' && conns.every((c) => !c.busy || c.closed)) finish();
    };

    const send = (c: Conn) => {
      c.busy = true;
      c.sentAt = performance.now();
      c.socket.write(requests[c.sent++ % requests.length] as Buffer);
    };

    const completed = (c: Conn, errorBody: string) => {
      const now = performance.now();
      c.busy = false;
      if (!c.ok) fail(`${c.status}: ${errorBody}`);
      else if (phase === 'measure') {
        const us = (now - c.sentAt) * 1000;
        latencies.push(us);
        latenciesBy[(c.sent - 1) % requests.length]?.push(us);
      }
      else if (phase === 'warmup' && countMode && ++warmupDone >= (spec.warmupCount ?? 0)) startWindow();
      if (phase === 'measure' && countMode && latencies.length >= (spec.count as number)) endWindow();
      if (phase === 'draining') return maybeDrained();
      if (!openLoop) send(c);
    };

    const onData = (c: Conn, chunk: Buffer) => {
      let buf = chunk;
      let off = 0;
      while (off < buf.length) {
        if (c.remaining < 0) {
          if (c.head) {
            buf = Buffer.concat([c.head, buf.subarray(off)]);
            off = 0;
            c.head = undefined;
          }
          const headerEnd = buf.indexOf('\r\n\r\n', off);
          if (headerEnd < 0) {
            c.head = buf.subarray(off);
            return;
          }
          const head = buf.toString('latin1', off, headerEnd);
          const m = CONTENT_LENGTH.exec(head);
          if (!m) {
            fail(`response without Content-Length: ${head.slice(0, 200)}`);
            c.socket.destroy();
            return;
          }
          c.status = head.slice(0, head.indexOf('\r\n'));
          c.ok = head.startsWith('HTTP/1.1 200');
          c.remaining = Number(m[1]);
          off = headerEnd + 4;
        }
        const take = Math.min(c.remaining, buf.length - off);
        const bodyStart = off;
        c.remaining -= take;
        off += take;
        if (c.remaining === 0) {
          c.remaining = -1;
          completed(c, c.ok ? '' : buf.toString('utf8', bodyStart, Math.min(off, bodyStart + 300)));
        }
      }
    };

    const connect = (): Conn => {
      const socket = net.connect({ host: '127.0.0.1', port: spec.port });
      socket.setNoDelay(true);
      const c: Conn = { socket, busy: false, sentAt: 0, sent: 0, head: undefined, remaining: -1, ok: true, status: '', closed: false };
      socket.on('connect', () => {
        if (!openLoop && !finished && phase !== 'draining') send(c);
      });
      socket.on('data', (chunk: Buffer) => onData(c, chunk));
      const lost = (why: string) => {
        if (c.closed) return;
        c.closed = true;
        if (!finished) fail(why);
        socket.destroy();
        if (finished) return;
        // Replace the connection, so the load keeps its shape.
        const i = conns.indexOf(c);
        if (phase !== 'draining' && i >= 0) conns[i] = connect();
        else maybeDrained();
      };
      socket.on('error', (err) => lost(`socket: ${err.message}`));
      socket.on('close', () => lost('the server closed the connection'));
      return c;
    };

    for (let i = 0; i < spec.connections; i++) conns.push(connect());

    if (openLoop) {
      const rate = spec.rate as number;
      const t0 = performance.now();
      let due = 0;
      ticker = setInterval(() => {
        const shouldHave = Math.floor(((performance.now() - t0) * rate) / 1000);
        while (due < shouldHave) {
          due++;
          if (phase === 'measure') offered++;
          const idle = conns.find((c) => !c.busy && !c.closed && c.socket.readyState === 'open');
          if (!idle) {
            if (phase === 'measure') skipped++;
            continue;
          }
          send(idle);
        }
      }, 1);
    }
    if (!countMode) timers.push(setTimeout(startWindow, spec.warmupMs ?? 0));
    else if ((spec.warmupCount ?? 0) === 0) startWindow();
    const cap = spec.capMs ?? (countMode ? 120_000 : (spec.warmupMs ?? 0) + (spec.durationMs ?? 1000) + 10_000);
    timers.push(
      setTimeout(() => {
        fail(`stopped after ${cap} ms with requests still in flight (phase ${phase})`);
        if (phase === 'measure') endWindow();
        finish();
      }, cap),
    );
  });
}

if (require.main === module) {
  process.on('message', (m: LoadMessage) => {
    if (m.type === 'exit') process.exit(0);
    runLoad(m.spec).then(
      (result) => process.send?.({ type: 'result', result } satisfies LoadReply),
      (err: unknown) => process.send?.({ type: 'failed', message: String(err) } satisfies LoadReply),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
