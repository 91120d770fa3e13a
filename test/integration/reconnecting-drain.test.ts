import { frontEndWrites, startDrainServer } from '../helpers/drain-server';
import { KSERVE_INFER } from '../helpers/infer-post';
import { RawConnection } from '../helpers/raw-connection';

// SIGTERM under 16 keep-alive clients that behave as Python's http.client does: one connection each, a request,
// its answer read in full, the next request on the same connection, and a new connection whenever an answer says
// `Connection: close`, until the closed port refuses one. Against a 50 ms model with max_batch_size 16, such
// clients saw ConnectionResetError after the signal (issue 35): the port closed with some of their new connections
// still in its accept queue, and the kernel reset them. Every request must get its answer (200 with the right
// numbers, or 503 with Triton's JSON and Connection: close); a connection may be refused; none may be reset or
// closed under a request.
jest.setTimeout(120_000);

const CLIENTS = 16;
/** Answers every client must have had before the signal, so that it lands under full load. */
const BEFORE_SIGNAL = 3;
/** Requests the clients send at most, together: the run ends even if the server never stopped. */
const MAX_REQUESTS = 100_000;
const STOPPING = '{"error":"Server is stopping and accepts no new requests"}';

/** What the clients of one run saw. */
interface Tally {
  requests: number;
  ok: number;
  /** 503 with Triton's JSON and Connection: close. */
  refused: number;
  /** New connections the closed port refused: no request went out on them. */
  connectionRefused: number;
  /** Resets, EOFs without an answer, wrong answers: each one a request without its answer. */
  failures: string[];
}

/** The request as http.client writes it: Host, Accept-Encoding: identity, Content-Length, the JSON body. */
function inferRequest(port: number): string {
  const { path, body } = KSERVE_INFER;
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept-Encoding: identity\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** One client in a loop, as http.client: it runs until a new connection is refused. */
async function client(port: number, tally: Tally, warm: () => void): Promise<void> {
  const request = inferRequest(port);
  let connection: RawConnection | undefined;
  let answers = 0;
  try {
    while (tally.requests < MAX_REQUESTS) {
      const fresh = connection === undefined;
      if (connection === undefined) {
        try {
          connection = await RawConnection.open(port);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ECONNREFUSED') {
            tally.connectionRefused++;
            return;
          }
          tally.failures.push(`${code ?? (err as Error).message} as the connection opened`);
          continue;
        }
      }
      tally.requests++;
      let answer: Awaited<ReturnType<RawConnection['request']>>;
      try {
        answer = await connection.request(request);
      } catch {
        const how = await connection.ended;
        const on = fresh ? 'a new connection' : 'a kept-alive connection';
        tally.failures.push(how === 'closed' ? `EOF without an answer on ${on}` : `${how} under a request on ${on}`);
        connection.close();
        connection = undefined;
        continue;
      }
      const closing = answer.headers.connection === 'close';
      if (answer.status === 200 && answer.body.includes('"data":[2,4,6]')) tally.ok++;
      else if (answer.status === 503 && closing && answer.body === STOPPING) tally.refused++;
      else tally.failures.push(`HTTP ${answer.status} (Connection: ${answer.headers.connection ?? 'none'}) ${answer.body}`);
      if (++answers === BEFORE_SIGNAL) warm();
      if (closing) {
        connection.close();
        connection = undefined;
      }
    }
    tally.failures.push(`still served after ${MAX_REQUESTS} requests`);
  } finally {
    connection?.close();
  }
}

describe.each([
  ['one thread (TSTRITON_HTTP_THREAD_COUNT=1)', 1],
  ['two front-end threads (TSTRITON_HTTP_THREAD_COUNT=2)', 2],
])('SIGTERM under 16 keep-alive clients that reconnect on Connection: close, %s', (_label, threads) => {
  it('answers every request, 200 or 503 with Connection: close; resets none, closes none under a request; exits 0', async () => {
    const { child, ports, exited } = await startDrainServer({ delayMs: 50, maxBatchSize: 16, env: { TSTRITON_HTTP_THREAD_COUNT: String(threads) } });
    // One thread serves the ports on the main thread: no front-end thread at all.
    expect(frontEndWrites(child.pid as number).size).toBe(threads === 1 ? 0 : threads);
    const tally: Tally = { requests: 0, ok: 0, refused: 0, connectionRefused: 0, failures: [] };
    let warming = CLIENTS;
    let warmed!: () => void;
    const allWarm = new Promise<void>((resolve) => (warmed = resolve));
    const clients = Array.from({ length: CLIENTS }, () => client(ports.http, tally, () => --warming === 0 && warmed()));
    await allWarm;
    child.kill('SIGTERM');
    await Promise.all(clients);
    expect(tally.failures).toEqual([]);
    expect(await exited).toBe(0);
    // Every request had its answer, and every client ran until the closed port refused it.
    expect(tally.ok + tally.refused).toBe(tally.requests);
    expect(tally.connectionRefused).toBe(CLIENTS);
    expect(tally.refused).toBeGreaterThan(0);
    expect(tally.ok).toBeGreaterThanOrEqual(CLIENTS * (BEFORE_SIGNAL - 1));
  });
});
