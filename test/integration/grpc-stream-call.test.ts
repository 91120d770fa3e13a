import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { DirectUnaryMethod } from '../../lib/server/grpc/direct-unary';
import { routeGrpcStream, type GrpcRoutes } from '../../lib/server/grpc/grpc-router';
import { framed } from '../../lib/server/grpc/server-call';
import type { StreamCall, StreamMethod } from '../../lib/server/grpc/stream-call';

// Streaming calls on our own gRPC framing (StreamCall), driven by grpc-js's client: the surface the handlers of
// ModelStreamInfer and Health/Watch use, with grpc-js's semantics.

const bytes = (b: Buffer): Buffer => b;
const text = (b: Buffer): string => b.toString();

/** What the handlers saw, for the test to read. */
interface Seen {
  calls: StreamCall<Buffer>[];
  cancelled: number;
  /** How many writes answered true before the first false, and whether 'drain' followed it. */
  beforeFull?: number;
  drained?: boolean;
}

let seen: Seen;
let server: http2.Http2Server;
let client: grpc.Client;

function streamMethod(path: string, kind: 'bidi' | 'server', handler: (call: StreamCall<Buffer>) => void, maxReceive = -1): StreamMethod<unknown, unknown> {
  const method: StreamMethod<Buffer> = {
    path,
    kind,
    handler: (call) => {
      seen.calls.push(call);
      call.on('cancelled', () => seen.cancelled++);
      handler(call);
    },
    encode: framed,
    maxReceive,
    maxSend: -1,
  };
  return method as StreamMethod<unknown, unknown>;
}

beforeAll(async () => {
  const routes: GrpcRoutes = new Map();
  const add = (m: StreamMethod<unknown, unknown> | DirectUnaryMethod<unknown, unknown>): void => void routes.set(m.path, m);
  // Echoes each request as `<request>`, then ends OK once the client has.
  add(
    streamMethod('/test.Stream/Echo', 'bidi', (call) => {
      call.on('data', (req: Buffer) => call.write(Buffer.from(`<${text(req)}>`)));
      call.on('end', () => call.end());
    }),
  );
  // Answers its one request `n` with the responses 0 .. n-1.
  add(
    streamMethod('/test.Stream/Count', 'server', (call) => {
      for (let i = 0; i < Number(text(call.request as Buffer)); i++) call.write(Buffer.from(String(i)));
      call.end();
    }),
  );
  // Writes until write() answers false, once more after 'drain', then ends.
  add(
    streamMethod('/test.Stream/Flood', 'server', (call) => {
      let n = 0;
      while (call.write(Buffer.alloc(1024, n % 256))) n++;
      seen.beforeFull = n;
      call.once('drain', () => {
        seen.drained = true;
        call.write(Buffer.from('last'));
        call.end();
      });
    }),
  );
  // Answers one response, then ends with the status its request names, as a handler's emit('error') does.
  add(
    streamMethod('/test.Stream/Fail', 'bidi', (call) => {
      call.on('error', () => undefined);
      call.on('data', (req: Buffer) => {
        call.write(Buffer.from('before'));
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `refused: ${text(req)} 100%` });
      });
    }),
  );
  // Never answers.
  add(streamMethod('/test.Stream/Hang', 'bidi', () => undefined));
  add(streamMethod('/test.Stream/Small', 'bidi', (call) => call.on('data', () => call.write(Buffer.from('ok'))), 8));
  server = http2.createServer();
  server.on('stream', (stream, headers) => routeGrpcStream(stream, headers, routes));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new grpc.Client(`127.0.0.1:${(server.address() as AddressInfo).port}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  if (server) await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen = { calls: [], cancelled: 0 };
});

interface Outcome {
  responses: string[];
  code: number;
  details: string;
}

/** Reads a client call to its end: its responses and its status. */
function outcome(call: grpc.ClientReadableStream<Buffer> | grpc.ClientDuplexStream<Buffer, Buffer>): Promise<Outcome> {
  const responses: string[] = [];
  return new Promise((resolve) => {
    call.on('data', (b: Buffer) => responses.push(text(b)));
    call.on('error', () => undefined);
    call.on('status', (s: grpc.StatusObject) => resolve({ responses, code: s.code, details: s.details }));
  });
}

/** Waits (event loop turns) for a count of the handlers' to reach `n`. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('bidirectional calls (StreamCall)', () => {
  it("emits 'data' for each request in order and 'end' when the client half-closes; end() sends OK after the responses", async () => {
    const call = client.makeBidiStreamRequest('/test.Stream/Echo', bytes, bytes);
    const done = outcome(call);
    for (const word of ['a', 'bb', '', 'ccc']) call.write(Buffer.from(word));
    call.end();
    expect(await done).toEqual({ responses: ['<a>', '<bb>', '<>', '<ccc>'], code: grpc.status.OK, details: 'OK' });
    await until(() => seen.cancelled === 1);
  });

  it("ends the call with the status of an 'error' emitted on it, after the responses written, its message percent-encoded", async () => {
    const call = client.makeBidiStreamRequest('/test.Stream/Fail', bytes, bytes);
    const done = outcome(call);
    call.write(Buffer.from('x'));
    expect(await done).toEqual({ responses: ['before'], code: grpc.status.INVALID_ARGUMENT, details: 'refused: x 100%' });
  });

  it("emits 'cancelled' when the client cancels, and when the deadline passes (DEADLINE_EXCEEDED)", async () => {
    const cancelled = client.makeBidiStreamRequest('/test.Stream/Hang', bytes, bytes);
    const first = outcome(cancelled);
    await until(() => seen.calls.length === 1);
    cancelled.cancel();
    expect((await first).code).toBe(grpc.status.CANCELLED);
    await until(() => seen.cancelled === 1);
    expect(seen.calls[0]?.cancelled).toBe(true);

    const late = client.makeBidiStreamRequest('/test.Stream/Hang', bytes, bytes, new grpc.Metadata(), { deadline: Date.now() + 100 });
    expect(await outcome(late)).toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    await until(() => seen.cancelled === 2);
    expect(seen.calls[1]?.getDeadline()).toBeLessThan(Infinity);
  });

  it('refuses a request message over the receive limit with RESOURCE_EXHAUSTED after answering those before it', async () => {
    const call = client.makeBidiStreamRequest('/test.Stream/Small', bytes, bytes);
    const done = outcome(call);
    call.write(Buffer.from('fine'));
    call.write(Buffer.alloc(9));
    call.end();
    expect(await done).toEqual({ responses: ['ok'], code: grpc.status.RESOURCE_EXHAUSTED, details: 'Received message larger than max (9 vs 8)' });
  });
});

describe('server-streaming calls (StreamCall)', () => {
  it('runs the handler once its one request has arrived, with the request in call.request', async () => {
    const done = outcome(client.makeServerStreamRequest('/test.Stream/Count', bytes, bytes, Buffer.from('3')));
    expect(await done).toEqual({ responses: ['0', '1', '2'], code: grpc.status.OK, details: 'OK' });
    expect(text(seen.calls[0]?.request as Buffer)).toBe('3');
  });

  it("answers false from write() once 16 responses wait to be taken, as grpc-js's stream calls do, then emits 'drain'", async () => {
    const done = outcome(client.makeServerStreamRequest('/test.Stream/Flood', bytes, bytes, Buffer.alloc(0)));
    const result = await done;
    expect([seen.beforeFull, seen.drained, result.code]).toEqual([15, true, grpc.status.OK]);
    expect(result.responses).toHaveLength(17);
    expect(result.responses[16]).toBe('last');
  });
});
