/**
 * The load generator, run as its own process: a closed loop over `concurrency` keep-alive HTTP/1.1
 * connections on raw sockets, each sending the same pre-built request bytes and waiting for the whole
 * response (status line, headers, Content-Length body) before sending the next. Raw sockets keep the
 * client's cost per request to a few microseconds, so at 32 connections it is the server that saturates.
 */
import * as net from 'node:net';
import { performance } from 'node:perf_hooks';

export interface LoadSpec {
  port: number;
  /** The raw request, base64. */
  request: string;
  concurrency: number;
  warmupMs: number;
  durationMs: number;
}

export interface LoadResult {
  /** Responses completed inside the measurement window. */
  count: number;
  /** Non-200 responses and socket errors (warm-up included). */
  errors: number;
  firstError?: string;
  elapsedMs: number;
  /** Latencies in microseconds, of the responses completed inside the window. */
  p50: number;
  p90: number;
  p99: number;
  mean: number;
  max: number;
  /** CPU the load generator itself used in the window, as a share of one core. */
  clientCpu: number;
  /** Connections whose request was still unanswered 5 s after the window (then dropped). */
  late: number;
}

export type LoadMessage = { type: 'run'; spec: LoadSpec } | { type: 'exit' };
export type LoadReply = { type: 'result'; result: LoadResult } | { type: 'failed'; message: string };

const CONTENT_LENGTH = /\r\ncontent-length:[ \t]*(\d+)/i;

export function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const request = Buffer.from(spec.request, 'base64');
  let phase: 'warmup' | 'measure' | 'stopping' = 'warmup';
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let windowStart = 0;
  let windowEnd = 0;
  let cpuStart: NodeJS.CpuUsage = process.cpuUsage();
  let cpuWindow: NodeJS.CpuUsage | undefined;
  let open = 0;
  let late = 0;
  const sockets = new Set<net.Socket>();

  const fail = (what: string) => {
    errors++;
    firstError ??= what;
  };

  return new Promise((resolve) => {
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(hardStop);
      latencies.sort((a, b) => a - b);
      const pick = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
      let sum = 0;
      for (const l of latencies) sum += l;
      const cpu = cpuWindow ?? process.cpuUsage(cpuStart);
      const elapsedMs = windowEnd - windowStart;
      resolve({
        count: latencies.length,
        errors,
        firstError,
        elapsedMs,
        p50: pick(0.5),
        p90: pick(0.9),
        p99: pick(0.99),
        mean: latencies.length ? sum / latencies.length : NaN,
        max: latencies[latencies.length - 1] ?? NaN,
        clientCpu: (cpu.user + cpu.system) / 1000 / elapsedMs,
        late,
      });
    };

    const connect = () => {
      open++;
      const socket = net.connect({ host: '127.0.0.1', port: spec.port });
      sockets.add(socket);
      socket.setNoDelay(true);
      let sentAt = 0;
      let pending: Buffer | undefined;
      let closed = false;
      const send = () => {
        sentAt = performance.now();
        socket.write(request);
      };
      const close = () => {
        if (closed) return;
        closed = true;
        sockets.delete(socket);
        socket.destroy();
        if (--open === 0 && phase === 'stopping') finish();
      };
      socket.on('connect', send);
      socket.on('error', (err) => {
        fail(`socket: ${err.message}`);
        close();
        if (phase !== 'stopping') connect();
      });
      socket.on('close', () => {
        if (!closed && phase !== 'stopping') fail('the server closed the connection');
        const wasClosed = closed;
        close();
        if (!wasClosed && phase !== 'stopping') connect();
      });
      socket.on('data', (chunk: Buffer) => {
        let buf = pending ? Buffer.concat([pending, chunk]) : chunk;
        pending = undefined;
        for (;;) {
          const headerEnd = buf.indexOf('\r\n\r\n');
          if (headerEnd < 0) break;
          const head = buf.toString('latin1', 0, headerEnd);
          const m = CONTENT_LENGTH.exec(head);
          if (!m) {
            fail(`response without Content-Length: ${head.slice(0, 200)}`);
            close();
            return;
          }
          const total = headerEnd + 4 + Number(m[1]);
          if (buf.length < total) break;
          const now = performance.now();
          const status = head.charCodeAt(9) === 50 && head.charCodeAt(10) === 48 && head.charCodeAt(11) === 48;
          if (!status) fail(`${head.slice(0, 12)}: ${buf.toString('utf8', headerEnd + 4, Math.min(total, headerEnd + 300))}`);
          else if (phase === 'measure') latencies.push((now - sentAt) * 1000);
          buf = buf.subarray(total);
          if (phase === 'stopping') {
            close();
            return;
          }
          send();
          if (buf.length === 0) return;
        }
        pending = buf;
      });
    };

    for (let i = 0; i < spec.concurrency; i++) connect();
    setTimeout(() => {
      phase = 'measure';
      windowStart = performance.now();
      cpuStart = process.cpuUsage();
      setTimeout(() => {
        phase = 'stopping';
        windowEnd = performance.now();
        cpuWindow = process.cpuUsage(cpuStart);
      }, spec.durationMs);
    }, spec.warmupMs);
    // Requests still in flight 5 s after the window are dropped (they are outside the window anyway).
    const hardStop = setTimeout(() => {
      late = open;
      for (const s of sockets) s.destroy();
      finish();
    }, spec.warmupMs + spec.durationMs + 5000);
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
