import * as http2 from 'node:http2';
import { createDeflate, gzipSync } from 'node:zlib';
import * as grpc from '@grpc/grpc-js';
import { INFER_METHOD, INFER_PATH, Rng, errorOf, expectGrpcServes, expectHttpServes, peakRss, rawHttp, requestBytes, resetPeakRss, startServer, suiteTitle, type ChildServer } from './helpers';

// Compressed requests that inflate far past the server's limits, against a server in its own process with the
// default config, so that its peak resident memory (VmHWM) can be read. The bombs are made of many small gzip
// members of zeros, so building them stays cheap.

const MiB = 1024 * 1024;
/** How far above its receive limit the server's peak may grow while refusing a bomb. */
const HEADROOM = 100 * MiB;

/** `members` gzip members of 1 MiB of zeros each: about 1 KB each on the wire, `members` MiB once inflated. */
function gzipBomb(members: number): Buffer {
  const member = gzipSync(Buffer.alloc(MiB));
  return Buffer.concat(new Array<Buffer>(members).fill(member));
}

/** One zlib stream of `mib` MiB of zeros (deflate has no members to repeat), written 1 MiB at a time. */
function deflateBomb(mib: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const deflate = createDeflate({ level: 9 });
    const out: Buffer[] = [];
    deflate.on('data', (c: Buffer) => out.push(c));
    deflate.on('end', () => resolve(Buffer.concat(out)));
    deflate.on('error', reject);
    const zeros = Buffer.alloc(MiB);
    let written = 0;
    const write = (): void => {
      while (written < mib) {
        written++;
        if (!deflate.write(zeros)) return void deflate.once('drain', write);
      }
      deflate.end();
    };
    write();
  });
}

let server: ChildServer;

beforeAll(async () => {
  server = await startServer();
});

afterAll(async () => {
  await server.kill();
});

/** The server's peak resident growth while `send` runs. */
async function peakGrowth<T>(send: () => Promise<T>): Promise<{ result: T; growth: number }> {
  resetPeakRss(server.pid);
  const before = peakRss(server.pid);
  const result = await send();
  return { result, growth: peakRss(server.pid) - before };
}

describe(suiteTitle('decompression bombs over HTTP'), () => {
  it.each<[string, string, () => Promise<Buffer>]>([
    ['1 MB of gzip that inflates to 1 GiB', 'gzip', async () => gzipBomb(1024)],
    ['deflate that inflates to 256 MiB', 'deflate', () => deflateBomb(256)],
  ])('answers 400 for %s, with bounded memory, and serves the next request', async (_what, encoding, make) => {
    const bomb = await make();
    expect(bomb.length).toBeLessThan(2 * MiB);
    const limit = server.httpMaxInputSize;
    expect(limit).toBe(64 * MiB);
    const request = requestBytes({ path: '/v2/models/add_sub/infer', headers: [['Content-Encoding', encoding], ['Content-Type', 'application/json']], body: bomb });
    const { result: res, growth } = await peakGrowth(() => rawHttp(server.http, request));
    expect(res?.status).toBe(400);
    expect(errorOf(res as NonNullable<typeof res>)).toBe(`decompressed request body exceeds the maximum allowed input size of ${limit} bytes`);
    expect(growth).toBeLessThanOrEqual(limit + HEADROOM);
    expect(server.exited()).toBeUndefined();
    await expectHttpServes(server.http, new Rng(1));
  });
});

describe(suiteTitle('decompression bombs over gRPC'), () => {
  /** A ModelInfer written by hand over HTTP/2: one gzip-flagged message, `grpc-encoding: gzip`. */
  function gzipCall(port: number, message: Buffer): Promise<{ status?: number; details: string }> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(`http://127.0.0.1:${port}`);
      session.on('error', reject);
      const req = session.request({ ':method': 'POST', ':path': INFER_PATH, 'content-type': 'application/grpc', te: 'trailers', 'grpc-encoding': 'gzip' });
      let status: number | undefined;
      let details = '';
      const take = (h: http2.IncomingHttpHeaders) => {
        if (h['grpc-status'] === undefined) return;
        status = Number(h['grpc-status']);
        details = decodeURIComponent(String(h['grpc-message'] ?? ''));
      };
      req.on('response', take);
      req.on('trailers', take);
      req.on('data', () => undefined);
      req.on('error', () => undefined);
      req.on('close', () => {
        session.close();
        resolve({ status, details });
      });
      const header = Buffer.alloc(5);
      header[0] = 1;
      header.writeUInt32BE(message.length, 1);
      req.end(Buffer.concat([header, message]));
    });
  }

  it('answers RESOURCE_EXHAUSTED for 1 MB of gzip that inflates to 1 GiB, with bounded memory, and serves the next request', async () => {
    const bomb = gzipBomb(1024);
    const limit = server.grpcMaxMessageSize;
    expect(limit).toBe(64 * MiB);
    const { result: answer, growth } = await peakGrowth(() => gzipCall(server.grpc, bomb));
    expect({ status: answer.status === undefined ? undefined : grpc.status[answer.status], details: answer.details }).toEqual({
      status: 'RESOURCE_EXHAUSTED',
      details: expect.stringContaining(String(limit)),
    });
    expect(growth).toBeLessThanOrEqual(limit + HEADROOM);
    expect(server.exited()).toBeUndefined();

    // A valid compressed request still succeeds, then an uncompressed one from grpc-js.
    const values = Float32Array.of(1, 2, 3, 4);
    const valid = INFER_METHOD.requestSerialize({
      model_name: 'add_sub',
      inputs: [
        { name: 'INPUT0', datatype: 'FP32', shape: [1, 4] },
        { name: 'INPUT1', datatype: 'FP32', shape: [1, 4] },
      ],
      raw_input_contents: [Buffer.from(values.buffer), Buffer.from(values.buffer)],
    });
    expect((await gzipCall(server.grpc, gzipSync(valid))).status).toBe(grpc.status.OK);
    const client = new grpc.Client(`127.0.0.1:${server.grpc}`, grpc.credentials.createInsecure());
    try {
      await expectGrpcServes(client, new Rng(2));
    } finally {
      client.close();
    }
  });
});
