import * as http from 'node:http';
import { connect, type Socket } from 'node:net';
import { ConnectionDrain } from '../../../../lib/server/http/connection-drain';
import { track } from '../../../helpers/resources';

/**
 * A node:http server whose connections a ConnectionDrain tracks, answering 200 "ok" once it has read the request (to
 * `/slow` once `held` settles); once closing, as HttpServer refuses a request, only after the port has closed.
 */
async function serve(held?: Promise<void>): Promise<{ server: http.Server; drain: ConnectionDrain; port: number }> {
  // Closed after the test if the drain did not close it (a failure).
  const server = track(
    http.createServer((req, res) => {
      if (!drain.track(req, res)) return;
      const answer = (): void => void res.end('ok');
      req.once('end', () => {
        if (held && req.url === '/slow') void held.then(answer);
        else if (drain.closing) drain.afterPortClosed(res, answer);
        else answer();
      });
      req.resume();
    }),
  );
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

  it('answers a request that arrives while the port is closing only once the port has closed: its client’s next connection is refused, not queued and reset', async () => {
    const { drain, port } = await serve();
    const stopped = drain.close(600_000);
    // The port stays open until it is quiet: a connection opened now is accepted, and its request refused later.
    const client = await rawClient(port);
    client.send();
    await client.answered(1);
    expect(client.received()).toMatch(/Connection: close\r\n/i);
    // Its client, told to close, opens another connection: the port has closed by the time the answer left.
    const next = connect(port, '127.0.0.1');
    await expect(new Promise((resolve, reject) => next.once('connect', resolve).once('error', reject))).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    client.socket.end();
    await stopped;
    expect(await client.ended).toBe('end');
  });

  it('reads what a client still sends after the answer that closed its connection, instead of resetting it', async () => {
    const { drain, port } = await serve();
    // A client that keeps its own side open after the server's FIN, to send on (a request pipelined behind one
    // that the server answered with Connection: close, as the client sees it).
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let received = '';
    socket.on('data', (d: Buffer) => (received += d.toString()));
    const serverEnded = new Promise<void>((resolve) => socket.once('end', () => resolve()));
    const errors: string[] = [];
    socket.on('error', (err: NodeJS.ErrnoException) => errors.push(err.code ?? err.message));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    drain.drain();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await serverEnded;
    expect(received).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*Connection: close\r\n[^]*\r\n\r\nok$/);
    // Sent after the server's FIN: read and dropped by the server, which closes once this client closes too. A
    // socket closed at once answers these bytes with a reset, and the next write here fails (EPIPE, ECONNRESET).
    const write = (data: string): Promise<string | undefined> =>
      new Promise((resolve) => socket.write(data, (err) => resolve((err as NodeJS.ErrnoException | null | undefined)?.code)));
    expect(await write('GET /late HTTP/1.1\r\nHost: x\r\n\r\n')).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await write('GET /later HTTP/1.1\r\nHost: x\r\n\r\n')).toBeUndefined();
    socket.end();
    await closed;
    expect(errors).toEqual([]);
    await drain.close(600_000);
  });

  it('answers every request pipelined in one packet after the stop began; the last answer closes the connection', async () => {
    const { drain, port } = await serve();
    const client = await rawClient(port);
    drain.drain();
    client.socket.write('GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n');
    await client.answered(2);
    const [first = '', second = ''] = client.received().split('\r\n\r\nok');
    expect(first).toMatch(/Connection: keep-alive\r\n/i);
    expect(second).toMatch(/Connection: close\r\n/i);
    expect(await client.ended).toBe('end');
    client.socket.destroy();
    await drain.close(600_000);
  });
});
