import * as http2 from 'node:http2';
import { GrpcHttp2Port } from '../../lib/server/grpc/grpc-http2';

// The gRPC port on node:http2 (GrpcHttp2Port): graceful close with GOAWAY, cut after the grace time.

let port: GrpcHttp2Port | undefined;
let session: http2.ClientHttp2Session | undefined;

afterEach(async () => {
  session?.destroy();
  session = undefined;
  await port?.close(0);
  port = undefined;
});

/** Starts a port whose streams `onStream` serves; resolves with a client session connected to it. */
async function serve(onStream: (stream: http2.ServerHttp2Stream) => void): Promise<{ client: http2.ClientHttp2Session; goaways: number[] }> {
  port = new GrpcHttp2Port({ window: 1 << 20 }, (stream) => {
    stream.on('error', () => undefined);
    onStream(stream);
  });
  const bound = await port.listen('127.0.0.1', 0);
  const client = http2.connect(`http://127.0.0.1:${bound}`);
  session = client;
  const goaways: number[] = [];
  client.on('goaway', (code: number) => goaways.push(code));
  client.on('error', () => undefined);
  return { client, goaways };
}

/** A request whose answer (status and body length) is read to its end, or its reset code. */
function request(client: http2.ClientHttp2Session): { answer: Promise<{ status?: number; bytes: number; rst: number }>; started: Promise<void> } {
  const req = client.request({ ':method': 'POST', ':path': '/a.B/C', 'content-type': 'application/grpc' });
  req.on('error', () => undefined);
  req.end();
  let status: number | undefined;
  let bytes = 0;
  const started = new Promise<void>((resolve) => req.once('response', () => resolve()));
  req.on('response', (h) => (status = Number(h[':status'])));
  req.on('data', (d: Buffer) => (bytes += d.length));
  const answer = new Promise<{ status?: number; bytes: number; rst: number }>((resolve) => req.on('close', () => resolve({ status, bytes, rst: req.rstCode ?? 0 })));
  return { answer, started };
}

describe('GrpcHttp2Port.close', () => {
  it('sends GOAWAY, lets the call in flight finish, and resolves once the connection has closed', async () => {
    let finish!: () => void;
    const { client, goaways } = await serve((stream) => {
      stream.respond({ ':status': 200 });
      stream.write('partial ');
      finish = () => stream.end('done');
    });
    const { answer, started } = request(client);
    await started;
    const closed = port!.close(30_000);
    await new Promise<void>((resolve) => client.once('goaway', () => resolve()));
    finish();
    expect(await answer).toEqual({ status: 200, bytes: 'partial done'.length, rst: 0 });
    await closed;
    expect(goaways[0]).toBe(http2.constants.NGHTTP2_NO_ERROR);
  });

  it('cuts a connection whose call is still open once the grace time is over (CANCEL)', async () => {
    const { client, goaways } = await serve((stream) => stream.respond({ ':status': 200 }));
    const { answer, started } = request(client);
    await started;
    const t0 = Date.now();
    await port!.close(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    expect((await answer).rst).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(goaways).toEqual([http2.constants.NGHTTP2_NO_ERROR, http2.constants.NGHTTP2_CANCEL]);
  });

  it('refuses to listen on a port in use with an error naming the address', async () => {
    port = new GrpcHttp2Port({ window: 1 << 20 }, () => undefined);
    const bound = await port.listen('127.0.0.1', 0);
    const other = new GrpcHttp2Port({ window: 1 << 20 }, () => undefined);
    try {
      await expect(other.listen('127.0.0.1', bound)).rejects.toThrow(`gRPC server could not listen on 127.0.0.1:${bound}`);
    } finally {
      await other.close(0);
    }
  });
});
