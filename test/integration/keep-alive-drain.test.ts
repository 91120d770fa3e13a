import * as http from 'node:http';
import { startDrainServer } from '../helpers/drain-server';
import { postInfer } from '../helpers/infer-post';

// SIGTERM while 16 keep-alive HTTP clients send requests in loops, pausing between two requests as real clients
// do (a Python client under the GIL, a busy event loop). A stopping server may close a kept-alive connection only
// when no request can be on its way on it: a close that crosses the client's next request resets that request
// (node: "socket hang up"; Python: ConnectionResetError). Every request must get its answer: 200, or 503 with
// Connection: close once the server stops; a new connection may be refused once the port has closed.
jest.setTimeout(90_000);

const CLIENTS = 16;
/** Answers every client must have had before the signal, so that the signal lands under full load. */
const BEFORE_SIGNAL = 3;
/** Requests one client sends at most: the run is bounded even if the server never stopped. */
const MAX_REQUESTS = 400;

interface Tally {
  ok: number;
  /** 503 with Connection: close: refused because the server is stopping. */
  refused: number;
  /** A new connection refused by the closed port: its request never went out. */
  connectionRefused: number;
  /** Resets, hang-ups, other statuses. */
  lost: string[];
}


/**
 * One keep-alive client (one connection at a time, reopened when the server closes it, as pooling clients do),
 * pausing `pause()` ms after each answer; it runs until the server refuses it.
 */
async function client(port: number, tally: Tally, pause: () => number, warm: () => void): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let n = 1; n <= MAX_REQUESTS; n++) {
      let res: Awaited<ReturnType<typeof postInfer>>;
      try {
        res = await postInfer(agent, port);
      } catch (err) {
        const e = err as NodeJS.ErrnoException & { reused?: boolean };
        if (e.code === 'ECONNREFUSED' && e.syscall === 'connect') tally.connectionRefused++;
        else tally.lost.push(`${e.code ?? ''} ${e.message}${e.reused ? ' (on a kept-alive connection)' : ''}`);
        return;
      }
      if (n === BEFORE_SIGNAL) warm();
      if (res.status === 503 && res.connection === 'close' && res.body === '{"error":"Server is stopping and accepts no new requests"}') {
        tally.refused++;
        return;
      }
      if (res.status !== 200 || res.body.indexOf('[2,4,6]') < 0) {
        tally.lost.push(`HTTP ${res.status} ${res.body}`);
        return;
      }
      tally.ok++;
      const ms = pause();
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
    }
    tally.lost.push(`still served after ${MAX_REQUESTS} requests`);
  } finally {
    agent.destroy();
  }
}

describe('SIGTERM under 16 keep-alive clients in loops', () => {
  it.each([
    ['back to back', () => 0],
    ['pausing up to 250 ms between requests', () => Math.random() * 250],
    ['pausing 120-180 ms between requests', () => 120 + Math.random() * 60],
  ])('%s: no request is reset, every client is refused in order, exit 0', async (_label, pause) => {
    // The fixture's model takes 20 ms.
    const { child, ports, exited } = await startDrainServer();
    const port = ports.http;
    const tally: Tally = { ok: 0, refused: 0, connectionRefused: 0, lost: [] };
    let warming = CLIENTS;
    let warmed!: () => void;
    const allWarm = new Promise<void>((resolve) => (warmed = resolve));
    const clients = Array.from({ length: CLIENTS }, () => client(port, tally, pause, () => --warming === 0 && warmed()));
    await allWarm;
    child.kill('SIGTERM');
    await Promise.all(clients);
    expect(tally.lost).toEqual([]);
    expect(await exited).toBe(0);
    expect(tally.refused + tally.connectionRefused).toBe(CLIENTS);
    expect(tally.ok).toBeGreaterThanOrEqual(CLIENTS * (BEFORE_SIGNAL - 1));
  });
});
