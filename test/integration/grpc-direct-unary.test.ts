import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { gzipSync, deflateSync } from 'node:zlib';
import type { DirectUnaryCall, DirectUnaryMethod, UnaryCallback } from '../../lib/server/grpc/direct-unary';
import { routeGrpcStream, type GrpcRoutes } from '../../lib/server/grpc/grpc-router';

const PATH = '/test.Echo/Say';

/** A gRPC length-prefixed message. */
function framed(body: Buffer, compressed = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed;
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** What a raw HTTP/2 client received for one call. */
interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** The status of an answer: from the trailers, or from the headers of a trailers-only answer. */
const statusOf = (a: Answer) => ({
  code: Number(a.trailers['grpc-status'] ?? a.headers['grpc-status']),
  details: decodeURI(String(a.trailers['grpc-message'] ?? a.headers['grpc-message'])),
});

describe('unary calls on node:http2 directly (DirectUnaryCall)', () => {
  let server: http2.Http2Server;
  let port: number;
  let client: http2.ClientHttp2Session;
  /** The calls the server saw, and what each handler should do with its call. */
  let calls: DirectUnaryCall<Buffer>[];
  let handle: (call: DirectUnaryCall<Buffer>, callback: UnaryCallback<Buffer>) => void;

  const method: DirectUnaryMethod<Buffer> = {
    path: PATH,
    handler: (call, callback) => {
      calls.push(call);
      handle(call, callback);
    },
    // The echo goes out in three pieces: a prefix, the request, a suffix.
    encode: (value) => {
      const pieces = [Buffer.from('<'), value, Buffer.from('>')];
      const messageLength = value.length + 2;
      const header = Buffer.alloc(5);
      header.writeUInt32BE(messageLength, 1);
      return { pieces: [header, ...pieces], messageLength };
    },
    maxReceive: 1024,
    maxSend: 1030,
  };

  beforeAll(async () => {
    server = http2.createServer();
    const routes: GrpcRoutes = new Map([[PATH, method as DirectUnaryMethod<unknown, unknown>]]);
    server.on('stream', (stream, headers) => routeGrpcStream(stream, headers, routes));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    client = http2.connect(`http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    client.close();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    calls = [];
    handle = (call, callback) => callback(null, call.request);
  });

  /** Sends `chunks` (each its own write) on a new call and reads the whole answer. */
  function call(chunks: Buffer[], headers: http2.OutgoingHttpHeaders = {}): Promise<Answer> {
    const req = client.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc', te: 'trailers', ...headers });
    return new Promise((resolve, reject) => {
      let responseHeaders: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const body: Buffer[] = [];
      req.on('response', (h) => (responseHeaders = h));
      req.on('trailers', (t) => (trailers = t));
      req.on('data', (d: Buffer) => body.push(d));
      req.on('close', () => resolve({ headers: responseHeaders, trailers, body: Buffer.concat(body) }));
      req.on('error', reject);
      for (const c of chunks) req.write(c);
      req.end();
    });
  }

  it('answers the message with the encoded pieces in order, then status OK in the trailers', async () => {
    const a = await call([framed(Buffer.from('hello'))]);
    expect(a.headers[':status']).toBe(200);
    expect(a.headers['content-type']).toBe('application/grpc+proto');
    expect(a.body).toEqual(framed(Buffer.from('<hello>')));
    expect(statusOf(a)).toEqual({ code: grpc.status.OK, details: 'OK' });
  });

  it('assembles a message sent a byte at a time, and one of zero bytes', async () => {
    const message = framed(Buffer.from('split across many frames'));
    const a = await call([...message].map((b) => Buffer.from([b])));
    expect(a.body).toEqual(framed(Buffer.from('<split across many frames>')));
    expect((await call([framed(Buffer.alloc(0))])).body).toEqual(framed(Buffer.from('<>')));
  });

  it('gives the handler the metadata without transport headers, and the deadline of grpc-timeout', async () => {
    const before = Date.now();
    await call([framed(Buffer.from('x'))], { 'x-request-tag': 'abc', 'grpc-timeout': '5S', 'grpc-accept-encoding': 'gzip' });
    const [c] = calls;
    expect(c?.metadata.get('x-request-tag')).toEqual(['abc']);
    for (const h of ['grpc-timeout', 'content-type', 'te', 'grpc-accept-encoding']) expect(c?.metadata.get(h)).toEqual([]);
    expect(c?.getDeadline()).toBeGreaterThanOrEqual(before + 5000);
    expect(c?.getDeadline()).toBeLessThanOrEqual(Date.now() + 5000);
    expect(c?.getPeer()).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('refuses what grpc-js refuses, with its codes and messages, as trailers only', async () => {
    const big = await call([framed(Buffer.alloc(1025))]);
    expect(statusOf(big)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'Received message larger than max (1025 vs 1024)' });
    expect(big.body.length).toBe(0);
    expect(statusOf(await call([framed(Buffer.from('a')), framed(Buffer.from('b'))]))).toEqual({
      code: grpc.status.UNIMPLEMENTED,
      details: `Received a second request message for server streaming method ${PATH}`,
    });
    const none = `Received no request message for server streaming method ${PATH}`;
    expect(statusOf(await call([]))).toEqual({ code: grpc.status.UNIMPLEMENTED, details: none });
    expect(statusOf(await call([framed(Buffer.from('truncated')).subarray(0, 8)]))).toEqual({ code: grpc.status.UNIMPLEMENTED, details: none });
    expect(statusOf(await call([framed(Buffer.from('z'), 1)]))).toEqual({
      code: grpc.status.INTERNAL,
      details: 'Received a compressed message but "grpc-encoding" is identity',
    });
    const long = await call([framed(Buffer.alloc(1029))]);
    expect(statusOf(long)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'Received message larger than max (1029 vs 1024)' });
    expect(calls).toHaveLength(0);
  });

  it('refuses a response over the send limit', async () => {
    const withMax = { ...method, maxReceive: -1 };
    const s = http2.createServer();
    const routes: GrpcRoutes = new Map([[PATH, withMax as DirectUnaryMethod<unknown, unknown>]]);
    s.on('stream', (stream, headers) => routeGrpcStream(stream, headers, routes));
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const c = http2.connect(`http://127.0.0.1:${(s.address() as AddressInfo).port}`);
    try {
      const req = c.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
      const status = new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('response', resolve));
      req.on('data', () => {});
      req.end(framed(Buffer.alloc(1029)));
      const h = await status;
      expect([Number(h['grpc-status']), decodeURI(String(h['grpc-message']))]).toEqual([grpc.status.RESOURCE_EXHAUSTED, 'Sent message larger than max (1036 vs. 1030)']);
    } finally {
      c.close();
      await new Promise((resolve) => s.close(resolve));
    }
  });

  it("sends a handler's status with its message percent-encoded as grpc-js does", async () => {
    handle = (_call, callback) => callback({ code: grpc.status.INVALID_ARGUMENT, details: 'bad input ünïcode 100%' });
    const a = await call([framed(Buffer.from('x'))]);
    expect(a.headers['grpc-message']).toBe(encodeURI('bad input ünïcode 100%'));
    expect(statusOf(a)).toEqual({ code: grpc.status.INVALID_ARGUMENT, details: 'bad input ünïcode 100%' });
  });

  it('ends a call past its deadline with DEADLINE_EXCEEDED and tells the handler it is cancelled', async () => {
    let cancelled = false;
    let late: UnaryCallback<Buffer> | undefined;
    handle = (c, callback) => {
      c.once('cancelled', () => (cancelled = true));
      late = callback;
    };
    const a = await call([framed(Buffer.from('x'))], { 'grpc-timeout': '50m' });
    expect(statusOf(a)).toEqual({ code: grpc.status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(cancelled).toBe(true);
    // Answering after the end writes nothing and does not throw.
    expect(() => late?.(null, Buffer.from('too late'))).not.toThrow();
  });

  it('tells the handler when the client resets the call, and ignores its answer after that', async () => {
    let answer: UnaryCallback<Buffer> | undefined;
    const cancelled = new Promise<void>((resolve) => {
      handle = (c, callback) => {
        answer = callback;
        c.once('cancelled', () => resolve());
      };
    });
    const req = client.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
    req.on('error', () => {});
    req.end(framed(Buffer.from('x')));
    while (calls.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    req.close(http2.constants.NGHTTP2_CANCEL);
    await cancelled;
    expect(calls[0]?.cancelled).toBe(true);
    expect(() => answer?.(null, Buffer.from('x'))).not.toThrow();
  });

  it('inflates a gzip or deflate message, bounded by the receive limit, with the codes and messages of grpc-js', async () => {
    const gz = await call([framed(gzipSync('hello'), 1)], { 'grpc-encoding': 'gzip' });
    expect([a2s(gz.body), statusOf(gz)]).toEqual([a2s(framed(Buffer.from('<hello>'))), { code: grpc.status.OK, details: 'OK' }]);
    expect(calls[0]?.metadata.get('grpc-encoding')).toEqual([]);
    const deflated = await call([framed(deflateSync('world'), 1)], { 'grpc-encoding': 'deflate' });
    expect(a2s(deflated.body)).toBe(a2s(framed(Buffer.from('<world>'))));
    // An uncompressed message on a call that names an encoding is read as it is.
    expect(a2s((await call([framed(Buffer.from('plain'))], { 'grpc-encoding': 'gzip' })).body)).toBe(a2s(framed(Buffer.from('<plain>'))));
    expect(calls).toHaveLength(3);

    expect(statusOf(await call([framed(gzipSync(Buffer.alloc(1025)), 1)], { 'grpc-encoding': 'gzip' }))).toEqual({
      code: grpc.status.RESOURCE_EXHAUSTED,
      details: 'Received message that decompresses to a size larger than 1024',
    });
    expect(statusOf(await call([framed(Buffer.from('not gzip'), 1)], { 'grpc-encoding': 'gzip' }))).toEqual({ code: grpc.status.INTERNAL, details: 'Failed to decompress message' });
    expect(statusOf(await call([framed(gzipSync('x'), 1)], { 'grpc-encoding': 'br' }))).toEqual({
      code: grpc.status.UNIMPLEMENTED,
      details: 'Received message compressed with unsupported encoding "br"',
    });
    expect(calls).toHaveLength(3);
  });

  it('answers what grpc-js answers before a handler runs: another content type, an unknown method, a grpc-timeout that is not one', async () => {
    const text = await call([framed(Buffer.from('x'))], { 'content-type': 'text/plain' });
    expect([text.headers[':status'], text.headers['grpc-status'], text.trailers['grpc-status']]).toEqual([415, undefined, undefined]);
    expect(statusOf(await call([framed(Buffer.from('x'))], { ':path': '/test.Echo/Nope' }))).toEqual({
      code: grpc.status.UNIMPLEMENTED,
      details: 'The server does not implement the method /test.Echo/Nope',
    });
    expect(statusOf(await call([framed(Buffer.from('x'))], { 'grpc-timeout': 'soon' }))).toEqual({ code: grpc.status.INTERNAL, details: 'Invalid grpc-timeout value "soon"' });
    expect(calls).toHaveLength(0);
  });

  it('decodes the request with the method\'s decoder, and answers INTERNAL when it throws', async () => {
    const decode = (bytes: Buffer): Buffer => {
      if (bytes.toString() === 'bad') throw new Error('not a request');
      return Buffer.from(bytes.toString().toUpperCase());
    };
    const decoding = { ...method, decode };
    const s = http2.createServer();
    const routes: GrpcRoutes = new Map([[PATH, decoding as DirectUnaryMethod<unknown, unknown>]]);
    s.on('stream', (stream, headers) => routeGrpcStream(stream, headers, routes));
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    const c = http2.connect(`http://127.0.0.1:${(s.address() as AddressInfo).port}`);
    const previous = client;
    client = c;
    try {
      expect(a2s((await call([framed(Buffer.from('abc'))])).body)).toBe(a2s(framed(Buffer.from('<ABC>'))));
      expect(statusOf(await call([framed(Buffer.from('bad'))]))).toEqual({ code: grpc.status.INTERNAL, details: 'Error deserializing request' });
    } finally {
      client = previous;
      c.close();
      await new Promise((resolve) => s.close(resolve));
    }
  });
});

/** A buffer as text, for comparisons whose failures read. */
function a2s(b: Buffer): string {
  return b.toString('latin1');
}

describe('ModelInfer on node:http2 directly: a connection that breaks', () => {
  it('cancels the call and keeps the server up when the client connection is cut mid-call', async () => {
    const server = http2.createServer();
    const cancelled: string[] = [];
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const method: DirectUnaryMethod<Buffer> = {
      path: PATH,
      handler: (c) => {
        c.once('cancelled', () => cancelled.push('cancelled'));
        entered();
      },
      encode: (value) => ({ pieces: [framed(value)], messageLength: value.length }),
      maxReceive: -1,
      maxSend: -1,
    };
    const routes: GrpcRoutes = new Map([[PATH, method as DirectUnaryMethod<unknown, unknown>]]);
    server.on('stream', (stream, headers) => routeGrpcStream(stream, headers, routes));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    try {
      // One call waits in its handler while its connection is cut with a TCP reset; another is cut while still
      // sending its message.
      const a = http2.connect(`http://127.0.0.1:${port}`);
      a.on('error', () => {});
      const waiting = a.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
      waiting.on('error', () => {});
      waiting.end(framed(Buffer.from('x')));
      await inHandler;
      const b = http2.connect(`http://127.0.0.1:${port}`);
      b.on('error', () => {});
      const sending = b.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
      sending.on('error', () => {});
      sending.write(framed(Buffer.alloc(100_000)).subarray(0, 50_000));
      await new Promise((resolve) => setTimeout(resolve, 50));
      a.socket.resetAndDestroy();
      b.socket.resetAndDestroy();
      while (cancelled.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      // The server still answers.
      const c = http2.connect(`http://127.0.0.1:${port}`);
      const req = c.request({ ':method': 'POST', ':path': PATH, 'content-type': 'application/grpc' });
      const status = new Promise<http2.IncomingHttpHeaders>((resolve) => req.on('response', resolve));
      req.end();
      const headers = await status;
      c.close();
      expect([headers[':status'], headers['grpc-status']]).toEqual([200, String(grpc.status.UNIMPLEMENTED)]);
      expect(cancelled).toEqual(['cancelled']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
