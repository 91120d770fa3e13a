import * as http from 'node:http';
import { connect, type Socket } from 'node:net';
import { ConnectionDrain } from '../../../../lib/server/http/connection-drain';

/** A node:http server whose connections a ConnectionDrain tracks, answering 200 "ok" (to `/slow` once `held` settles). */
async function serve(held?: Promise<void>): Promise<{ server: http.Server; drain: ConnectionDrain; port: number }> {
  const server = http.createServer((req, res) => {
    drain.track(req, res);
    if (held && req.url === '/slow') void held.then(() => res.end('ok'));
    else res.end('ok');
  });
  const drain = new ConnectionDrain(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, drain, port: (server.address() as { port: number }).port };
}

/** Resolves with 'end' when the server closes the connection in order, 'reset' on an error. */
function ending(socket: Socket): Promise<'end' | 'reset'> {
  return new Promise((resolve) => {
    socket.once('end', () => resolve('end'));
    socket.once('error', () => resolve('reset'));
  });
}

/**
 * A raw keep-alive connection: `send` writes a GET; `answered(n)` resolves once `n` answers (`ok`, the last bytes
 * of a response) are in, and throws if the server closed the connection first.
 */
async function rawClient(port: number) {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  let received = '';
  let closed = false;
  let wake: (() => void) | undefined;
  socket.on('data', (d: Buffer) => {
    received += d.toString();
    wake?.();
  });
  const ended = ending(socket);
  socket.once('close', () => {
    closed = true;
    wake?.();
  });
  const answers = (): number => received.split('\r\n\r\nok').length - 1;
  return {
    socket,
    ended,
    received: (): string => received,
    answers,
    send: (path = '/'): void => void socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`),
    answered: async (n: number): Promise<void> => {
      while (answers() < n) {
        if (closed) throw new Error(`the server closed the connection before answer ${n}`);
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
  };
}

describe('ConnectionDrain', () => {
  it('closes a connection that never sends a request, instead of waiting out the grace for it', async () => {
    const { drain, port } = await serve();
    const spare = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => spare.once('connect', () => resolve()));
    const ended = ending(spare);
    // A grace far past this test's timeout: the close can only resolve by closing the spare connection itself.
    await drain.close(600_000);
    expect(await ended).toBe('end');
    spare.destroy();
  });

  it('keeps an idle kept-alive connection open for its client’s next request when that client pauses between requests', async () => {
    const { drain, port } = await serve();
    const client = await rawClient(port);
    /** Sends one request and resolves once its answer is in. */
    const exchange = async (): Promise<void> => {
      const next = client.answers() + 1;
      client.send();
      await client.answered(next);
    };
    const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 150));
    // A client in a loop that pauses 150 ms after each answer (longer than the shortest linger, 100 ms).
    await exchange();
    await pause();
    await exchange();
    const closed = drain.close(600_000);
    await pause();
    // Its next request, sent 150 ms after the last answer, finds the connection open and is answered; then the
    // connection closes in order (this server does not refuse: it answers 200 with Connection: close).
    await exchange();
    expect(client.received().split('HTTP/1.1 200 OK').length - 1).toBe(3);
    expect(client.received()).toMatch(/Connection: close\r\n/i);
    await closed;
    expect(await client.ended).toBe('end');
    client.socket.destroy();
  });

  it('keeps a connection that a response of the stop kept alive open for its next request, past its client’s usual pauses', async () => {
    let release!: () => void;
    const { drain, port } = await serve(new Promise<void>((resolve) => (release = resolve)));
    const client = await rawClient(port);
    // Two requests back to back (no pause to speak of), the second in flight when the stop begins.
    client.send();
    await client.answered(1);
    client.send('/slow');
    await new Promise((resolve) => setTimeout(resolve, 50));
    drain.drain();
    release();
    await client.answered(2);
    // Its response keeps the connection: it was under way when the stop began.
    expect(client.received()).not.toMatch(/Connection: close/i);
    const stopped = drain.close(600_000);
    // The client comes back 400 ms later: past the shortest linger and eight times its pauses so far.
    await new Promise((resolve) => setTimeout(resolve, 400));
    client.send();
    await client.answered(3);
    expect(client.received().split('HTTP/1.1 200 OK').length - 1).toBe(3);
    expect(client.received()).toMatch(/Connection: close\r\n/i);
    await stopped;
    expect(await client.ended).toBe('end');
    client.socket.destroy();
  });

  it('still answers the first request of a connection that sends it just after the port closed', async () => {
    const { drain, port } = await serve();
    const late = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => late.once('connect', () => resolve()));
    let answer = '';
    late.on('data', (d: Buffer) => (answer += d.toString()));
    const ended = ending(late);
    const closed = drain.close(600_000);
    late.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await closed;
    expect(await ended).toBe('end');
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/);
    expect(answer).toMatch(/\r\n\r\nok$/);
    late.destroy();
  });
});
