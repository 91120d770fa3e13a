import * as net from 'node:net';
import type { Triton } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

// Requests that went wrong before reaching a model: malformed %-escapes in paths (one ended the process),
// requests node's HTTP parser refuses, absolute-form targets. Raw sockets, so that nothing is cleaned up on
// the way.

let triton: Triton;
let port: number;

beforeAll(async () => {
  triton = loopbackTriton({ allowSharedMemory: true });
  triton.bind({
    modelName: 'double',
    inferFunc: batch(async ({ INPUT0 }) => ({ OUTPUT0: { ...INPUT0!, data: (INPUT0!.data as Float32Array).map((v) => v * 2) } })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  triton.http.router.get('/custom/throws', () => {
    throw new Error('a user route failed');
  });
  triton.http.router.get('/custom/rejects', async () => {
    await Promise.resolve();
    throw new Error('a user route rejected');
  });
  await triton.run();
  port = triton.ports.http as number;
});

afterAll(() => triton.stop());

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `raw` on a new connection and reads the one answer until the server closes or the body is complete. */
function send(raw: string | Buffer, to = port): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(to, '127.0.0.1');
    const chunks: Buffer[] = [];
    const done = (): void => {
      const text = Buffer.concat(chunks).toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(text)}`));
      const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const body = text.slice(end + 4);
      const length = Number(headers['content-length']);
      if (Number.isFinite(length) && Buffer.byteLength(body, 'latin1') < length) return;
      socket.destroy();
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body });
    };
    socket.on('data', (c) => {
      chunks.push(c);
      done();
    });
    socket.on('end', done);
    socket.on('error', reject);
    socket.end(raw);
  });
}

const INFER = JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] });

function post(path: string, body = INFER, extra = ''): string {
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`;
}

/** The server still answers a valid request with the right numbers. */
async function stillServes(): Promise<void> {
  const res = await send(post('/v2/models/double/infer'));
  expect(res.status).toBe(200);
  expect((JSON.parse(res.body) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4]);
}

describe('malformed percent-encoding in paths', () => {
  it.each([
    ['POST', '/v2/models/%ZZ/infer'],
    ['POST', '/v2/models/%/infer'],
    ['POST', '/v2/models/%E0%A4%A/infer'],
    ['POST', '/v2/models/%C0%AE%C0%AE/infer'],
    ['POST', '/v2/models/%ZZ/versions/1/infer'],
    ['GET', '/v2/models/%ZZ'],
    ['GET', '/v2/models/%ZZ/ready'],
    ['GET', '/v2/models/%ZZ/config'],
    ['GET', '/v2/models/%ZZ/stats'],
    ['GET', '/v2/models/%E0%A4%A/trace/setting'],
    ['POST', '/v2/models/%ZZ/generate'],
    ['POST', '/v2/repository/models/%ZZ/load'],
    ['GET', '/v2/systemsharedmemory/region/%ZZ/status'],
  ])('%s %s answers 400 with an error body, and the server goes on', async (method, path) => {
    const res = await send(method === 'GET' ? `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n` : post(path, '{}'));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(JSON.parse(res.body)).toEqual({ error: expect.stringMatching(/^malformed percent-encoding in the request path: '/) });
    await stillServes();
  });

  it('decodes well-formed escapes as before', async () => {
    const res = await send(post('/v2/models/%64ouble/infer'));
    expect(res.status).toBe(200);
  });
});

describe("requests node's parser refuses get Triton's JSON body", () => {
  it.each([
    ['a bad Content-Length', `POST /v2/models/double/infer HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}`, 400, /^malformed HTTP request: .*Content-Length \(HPE_/],
    ['two Content-Lengths', `POST /v2/models/double/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, 400, /^malformed HTTP request: .*\(HPE_/],
    ['a bad Transfer-Encoding', `POST /v2/models/double/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n`, 400, /^malformed HTTP request: .*\(HPE_/],
    ['a bad chunk size', `POST /v2/models/double/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`, 400, /^malformed HTTP request: .*chunk size \(HPE_INVALID_CHUNK_SIZE\)$/],
    ['a header line without a colon', `GET /v2/health/live HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n`, 400, /^malformed HTTP request: .*\(HPE_/],
    ['headers over the limit', `GET /v2/health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, /^request header fields too large: the request line and headers exceed \d+ bytes$/],
  ])('%s: %#', async (_what, raw, status, message) => {
    const res = await send(raw);
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers.connection).toBe('close');
    expect(JSON.parse(res.body)).toEqual({ error: expect.stringMatching(message) });
    await stillServes();
  });
});

describe('absolute-form request targets', () => {
  it('routes the infer hot path by the path', async () => {
    const res = await send(post(`http://127.0.0.1:${port}/v2/models/double/infer`));
    expect(res.status).toBe(200);
    expect((JSON.parse(res.body) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4]);
  });

  it('routes the other endpoints by the path, query included', async () => {
    const live = await send(`GET http://localhost:${port}/v2/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(live.status).toBe(200);
    const meta = await send(`GET http://localhost/v2/models/double?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(meta.status).toBe(200);
    expect(JSON.parse(meta.body)).toMatchObject({ name: 'double' });
    const root = await send(`GET http://localhost HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(root.status).toBe(404);
  });
});

describe('absolute-form request targets and restricted APIs', () => {
  let restricted: Triton;
  let restrictedPort: number;
  beforeAll(async () => {
    restricted = loopbackTriton({ httpRestrictedApi: 'inference:infer-key=i' });
    restricted.bind({
      modelName: 'double',
      inferFunc: batch(async ({ INPUT0 }) => ({ OUTPUT0: { ...INPUT0!, data: (INPUT0!.data as Float32Array).map((v) => v * 2) } })),
      inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
      outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
    await restricted.run();
    restrictedPort = restricted.ports.http as number;
  });
  afterAll(() => restricted.stop());

  it('checks the restriction on the path the request is routed by', async () => {
    const target = `http://127.0.0.1:${restrictedPort}/v2/models/double/infer`;
    const refused = await send(post(target), restrictedPort);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toEqual({ error: expect.stringContaining('infer-key') });
    const served = await send(post(target, INFER, 'infer-key: i\r\n'), restrictedPort);
    expect(served.status).toBe(200);
  });
});

describe('errors thrown by routes', () => {
  it.each([
    ['throws', 'a user route failed'],
    ['rejects', 'a user route rejected'],
  ])("a user's route that %s is answered 500 in Triton's form, not express's page", async (what, message) => {
    const res = await send(`GET /custom/${what} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    expect(res.status).toBe(500);
    expect(res.headers['content-type']).toBe('application/json');
    expect(JSON.parse(res.body)).toEqual({ error: message });
    await stillServes();
  });
});

describe('request bodies that are not UTF-8', () => {
  /** POSTs `body` (bytes as they are) to `path`; the status and the parsed JSON answer. */
  async function postBytes(path: string, body: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  }

  /** An infer body with `id` spliced in as raw bytes, and `count` input values (a header of 4 KiB or more is parsed from its bytes). */
  function inferBody(id: Buffer, count = 2): Buffer {
    const data = Array.from({ length: count }, (_, i) => i + 0.25);
    const [head, tail] = JSON.stringify({ id: '@', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, count], data }] }).split('@') as [string, string];
    return Buffer.concat([Buffer.from(head), id, Buffer.from(tail)]);
  }

  // A stray byte, an overlong '/', an encoded surrogate, a sequence cut off.
  const BAD = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]].map((b) => Buffer.from([0x61, ...b, 0x62]));
  const NOT_UTF8 = /^failed to parse the request JSON buffer: the document is not valid UTF-8/;

  it('refuses a JSON infer request with 400, a small header and a large one alike, rather than replacing its bytes', async () => {
    for (const count of [2, 2000]) {
      expect(inferBody(Buffer.from('x'), count).length).toBeGreaterThanOrEqual(count === 2 ? 0 : 4096);
      for (const bad of BAD) {
        const res = await postBytes('/v2/models/double/infer', inferBody(bad, count));
        expect([count, bad, res.status]).toEqual([count, bad, 400]);
        expect(res.json.error).toMatch(NOT_UTF8);
      }
    }
    // The JSON header of a binary request as well.
    const header = inferBody(BAD[0]!, 0);
    const binary = await postBytes('/v2/models/double/infer', header, { 'inference-header-content-length': String(header.length) });
    expect(binary.status).toBe(400);
    expect(binary.json.error).toMatch(NOT_UTF8);
    // Well-formed UTF-8 goes through as it was sent.
    const ok = await postBytes('/v2/models/double/infer', inferBody(Buffer.from('é€😀')));
    expect(ok.status).toBe(200);
    expect(ok.json.id).toBe('é€😀');
    await stillServes();
  });

  it('refuses a generate request with 400 too', async () => {
    const body = (id: Buffer) => Buffer.concat([Buffer.from('{"INPUT0":[1,2],"id":"'), id, Buffer.from('"}')]);
    const bad = await postBytes('/v2/models/double/generate', body(BAD[0]!));
    expect(bad.status).toBe(400);
    expect(bad.json.error).toMatch(NOT_UTF8);
    const ok = await postBytes('/v2/models/double/generate', body(Buffer.from('é')));
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ id: 'é', OUTPUT0: [2, 4] });
  });
});
