import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { releaseOnceSent } from '../../lib/server/grpc/on-the-wire';

/**
 * What a unary response is written from is held until its bytes have left: past the stream's close, until the
 * client has answered a PING sent after it (on-the-wire.ts). A real node:http2 server and client on loopback.
 */
describe('releaseOnceSent: held until the stream has closed and a PING sent after it is answered', () => {
  let server: http2.Http2Server;
  let port: number;
  let client: http2.ClientHttp2Session;
  /** What the server does with each stream. */
  let onStream: (stream: http2.ServerHttp2Stream) => void;
  /** The PINGs the client received from the server. */
  let pings: number;

  beforeEach(async () => {
    server = http2.createServer();
    server.on('stream', (stream) => onStream(stream));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    client = http2.connect(`http://127.0.0.1:${port}`);
    pings = 0;
    client.on('ping', () => pings++);
  });

  afterEach(async () => {
    client?.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** One request; resolves with the body once the client has read the whole answer. */
  function call(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const req = client.request({ ':path': '/', ':method': 'POST' });
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks)));
      req.on('error', reject);
      req.end();
    });
  }

  /** Answers with `body` and registers its release; `events` records what happened in which order. */
  function answer(body: Buffer, events: string[]): (stream: http2.ServerHttp2Stream) => void {
    return (stream) => {
      stream.respond({ ':status': 200 }, { waitForTrailers: true });
      stream.once('wantTrailers', () => stream.sendTrailers({ done: '1' }));
      stream.write(body, () => events.push('write callback'));
      stream.end();
      stream.once('close', () => events.push('stream closed'));
      releaseOnceSent(stream, body, () => events.push('released'));
    };
  }

  it('lets go only after the stream has closed, once the client has answered the PING that followed', async () => {
    const events: string[] = [];
    const body = Buffer.alloc(4 << 20, 7);
    onStream = answer(body, events);
    const got = await call();
    expect(got.equals(body)).toBe(true);
    await waitFor(() => events.includes('released'));
    expect(events.indexOf('released')).toBeGreaterThan(events.indexOf('stream closed'));
    expect(events.indexOf('released')).toBeGreaterThan(events.indexOf('write callback'));
    expect(pings).toBe(1);
  });

  it('covers the streams that close while a PING is out with the next one, one PING at a time per connection', async () => {
    const released: number[] = [];
    let n = 0;
    onStream = (stream) => {
      const k = n++;
      stream.respond({ ':status': 200 });
      stream.end(Buffer.alloc(1024, k));
      releaseOnceSent(stream, undefined, () => released.push(k));
    };
    await Promise.all(Array.from({ length: 20 }, () => call()));
    await waitFor(() => released.length === 20);
    expect([...released].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    // 20 streams, far fewer PINGs: each one answers for every stream closed before it went out.
    expect(pings).toBeGreaterThanOrEqual(1);
    expect(pings).toBeLessThan(20);
  });

  it('lets go at once when the connection is gone, and when it closes before the PING is answered', async () => {
    const events: string[] = [];
    onStream = (stream) => {
      const session = stream.session as http2.ServerHttp2Session;
      stream.respond({ ':status': 200 });
      stream.end('x');
      stream.once('close', () => {
        releaseOnceSent(stream, undefined, () => events.push('released after close'));
        // The connection goes before the client can answer a PING.
        session.destroy();
        releaseOnceSent(stream, undefined, () => events.push('released on a destroyed connection'));
      });
    };
    await call().catch(() => undefined);
    await waitFor(() => events.length === 2);
    expect(events.sort()).toEqual(['released after close', 'released on a destroyed connection']);
  });
});

async function waitFor(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the condition');
    await new Promise((r) => setTimeout(r, 10));
  }
}
