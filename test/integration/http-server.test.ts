import { gzipSync, gunzipSync } from 'node:zlib';
import { Triton, TritonError, UnrecoverableError, tensor, type Request } from '../../lib';
import { batch } from '../../decorators';
import { loopbackTriton } from '../helpers/loopback-triton';

function newTriton(): Triton {
  return loopbackTriton({ exitTimeoutSeconds: 5 });
}

/** A promise with its resolve function, to hold a callable until the test releases it. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('HTTP server', () => {
  let triton: Triton;
  let base: string;

  beforeEach(async () => {
    triton = newTriton();
    triton.bind({
      modelName: 'double',
      inferFunc: batch(async (inputs) => {
        const x = inputs.x!;
        return { y: tensor('INT64', x.shape, (x.data as BigInt64Array).map((v) => v * 2n)) };
      }),
      inputs: [{ name: 'x', dtype: 'INT64', shape: [-1] }],
      outputs: [{ name: 'y', dtype: 'INT64', shape: [-1] }],
      config: { maxBatchSize: 8 },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  });

  afterEach(async () => {
    await triton.stop();
  });

  const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${base}${path}`, { method: 'POST', body, headers });

  it('answers health, server metadata, model metadata and config', async () => {
    expect((await fetch(`${base}/v2/health/live`)).status).toBe(200);
    expect((await fetch(`${base}/v2/health/ready`)).status).toBe(200);
    const meta = (await (await fetch(`${base}/v2`)).json()) as { extensions: string[] };
    expect(meta.extensions).toContain('binary_tensor_data');
    const model = await (await fetch(`${base}/v2/models/double/versions/1`)).json();
    expect(model).toEqual({
      name: 'double',
      versions: ['1'],
      platform: 'tstriton',
      inputs: [{ name: 'x', datatype: 'INT64', shape: [-1, -1] }],
      outputs: [{ name: 'y', datatype: 'INT64', shape: [-1, -1] }],
    });
    const config = (await (await fetch(`${base}/v2/models/double/config`)).json()) as Record<string, unknown>;
    expect(config.max_batch_size).toBe(8);
    expect((await fetch(`${base}/v2/models/double/ready`)).status).toBe(200);
  });

  it('keeps INT64 exact beyond 2^53 in JSON and echoes the id', async () => {
    const res = await post('/v2/models/double/infer', '{"id":"abc","inputs":[{"name":"x","datatype":"INT64","shape":[1,2],"data":[2305843009213693953,-3]}]}');
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('"data":[4611686018427387906,-6]');
    expect(JSON.parse(text).id).toBe('abc');
  });

  it('speaks the binary tensor extension both ways', async () => {
    const header = Buffer.from(JSON.stringify({
      inputs: [{ name: 'x', datatype: 'INT64', shape: [1, 2], parameters: { binary_data_size: 16 } }],
      outputs: [{ name: 'y', parameters: { binary_data: true } }],
    }));
    const body = Buffer.concat([header, Buffer.from(new BigInt64Array([5n, 7n]).buffer)]);
    const res = await post('/v2/models/double/infer', body, { 'Inference-Header-Content-Length': String(header.length) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    const ihcl = Number(res.headers.get('inference-header-content-length'));
    const raw = Buffer.from(await res.arrayBuffer());
    const json = JSON.parse(raw.subarray(0, ihcl).toString());
    expect(json.outputs[0].parameters).toEqual({ binary_data_size: 16 });
    const out = new BigInt64Array(raw.buffer.slice(raw.byteOffset + ihcl, raw.byteOffset + ihcl + 16));
    expect([...out]).toEqual([10n, 14n]);
  });

  it('accepts gzip bodies and answers gzip when asked', async () => {
    const body = gzipSync('{"inputs":[{"name":"x","datatype":"INT64","shape":[1,1],"data":[21]}]}');
    const res = await fetch(`${base}/v2/models/double/infer`, {
      method: 'POST',
      body,
      headers: { 'Content-Encoding': 'gzip', 'Accept-Encoding': 'gzip' },
    });
    expect(res.status).toBe(200);
    // fetch decompresses transparently; the header says what went over the wire.
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([42]);
    expect(gunzipSync(gzipSync('x')).toString()).toBe('x');
  });

  it.each([
    ['unknown model', '/v2/models/nope/infer', '{"inputs":[]}', {}, 400, /Request for unknown model: 'nope' is not found/],
    ['malformed JSON', '/v2/models/double/infer', '{"inputs":[', {}, 400, /failed to parse the request JSON/],
    ['wrong dtype', '/v2/models/double/infer', '{"inputs":[{"name":"x","datatype":"INT32","shape":[1,1],"data":[1]}]}', {}, 400, /data-type is 'INT32', but model 'double' expects 'INT64'/],
    ['batch above max', '/v2/models/double/infer', `{"inputs":[{"name":"x","datatype":"INT64","shape":[9,1],"data":[${Array(9).fill(1)}]}]}`, {}, 400, /batch-size must be <= 8/],
    ['wrong rank', '/v2/models/double/infer', '{"inputs":[{"name":"x","datatype":"INT64","shape":[1],"data":[1]}]}', {}, 400, /unexpected shape for input 'x'/],
    ['missing input', '/v2/models/double/infer', '{"inputs":[]}', {}, 400, /missing required input\(s\) \['x'\]/],
    ['unknown output', '/v2/models/double/infer', '{"inputs":[{"name":"x","datatype":"INT64","shape":[1,1],"data":[1]}],"outputs":[{"name":"z"}]}', {}, 400, /unexpected inference output 'z'/],
    ['missing binary data', '/v2/models/double/infer', '{"inputs":[{"name":"x","datatype":"INT64","shape":[1,1],"parameters":{"binary_data_size":8}}]}', { 'Inference-Header-Content-Length': 'whole body' }, 400, /unexpected size for input 'x', expecting 8 additional bytes/],
    ['reserved parameter', '/v2/models/double/infer', '{"parameters":{"triton_x":1},"inputs":[]}', {}, 400, /reserved for Triton usage/],
    ['unsupported encoding', '/v2/models/double/infer', 'x', { 'Content-Encoding': 'br' }, 501, /Unsupported compression type 'br'/],
    ['unknown route', '/v3/whatever', 'x', {}, 404, /^Not Found$/],
  ])('%s → status %s with a JSON error', async (_name, path, body, headers, status, message) => {
    const h = { ...(headers as Record<string, string>) };
    if (h['Inference-Header-Content-Length'] === 'whole body') h['Inference-Header-Content-Length'] = String(Buffer.byteLength(body));
    const res = await post(path, body, h);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(((await res.json()) as { error: string }).error).toMatch(message);
  });

  it('answers 405 for a wrong method and keeps serving after errors', async () => {
    const res = await fetch(`${base}/v2/models/double/infer`);
    expect(res.status).toBe(405);
    expect(await res.json()).toEqual({ error: 'Method Not Allowed' });
    const ok = await post('/v2/models/double/infer', '{"inputs":[{"name":"x","datatype":"INT64","shape":[1,1],"data":[1]}]}');
    expect(ok.status).toBe(200);
  });

  it('reads and changes the log settings on /v2/logging, refusing what it cannot do', async () => {
    const get = async () => (await (await fetch(`${base}/v2/logging`)).json()) as Record<string, unknown>;
    const post = (body: string) => fetch(`${base}/v2/logging`, { method: 'POST', body });
    const before = await get();
    expect(before).toMatchObject({ log_file: '', log_format: 'json', log_error: false }); // the test server is silent; new Triton() writes JSON lines
    const changed = await post(JSON.stringify({ log_verbose_level: 1 }));
    expect(changed.status).toBe(200);
    expect(await changed.json()).toMatchObject({ log_verbose_level: 1, log_info: true });
    expect((await get()).log_verbose_level).toBe(1);
    const file = await post(JSON.stringify({ log_file: '/tmp/x.log' }));
    expect(file.status).toBe(501);
    expect(((await file.json()) as { error: string }).error).toBe('log file location can not be updated through network protocol');
    expect((await post('[1]')).status).toBe(400);
    expect((await post(JSON.stringify({ log_info: 'yes' }))).status).toBe(400);
    expect((await fetch(`${base}/v2/logging`, { method: 'PUT' })).status).toBe(405);
    await post(JSON.stringify({ log_verbose_level: before.log_verbose_level, log_info: before.log_info, log_warning: before.log_warning, log_error: before.log_error }));
    expect(await get()).toEqual(before);
  });

  it('serves users\' own express routes', async () => {
    triton.http.router.get('/custom', (_req, res) => {
      res.json({ hello: 'world' });
    });
    expect(await (await fetch(`${base}/custom`)).json()).toEqual({ hello: 'world' });
  });
});

describe('binding', () => {
  it('rejects bad names, duplicates and invalid config, naming the problem', () => {
    const triton = newTriton();
    const spec = { inferFunc: (rs: Request[]) => rs.map(() => ({})), inputs: [], outputs: [{ dtype: 'FP32' as const, shape: [1] }] };
    expect(() => triton.bind({ ...spec, modelName: '../etc' })).toThrow(/invalid modelName/);
    triton.bind({ ...spec, modelName: 'm' });
    expect(() => triton.bind({ ...spec, modelName: 'm' })).toThrow(/model 'm' version 1 is already bound/);
    expect(() => triton.bind({ ...spec, modelName: 'n', config: { maxBatchSize: -1 } })).toThrow(/maxBatchSize: maxBatchSize must not be less than 1/);
    expect(() => triton.bind({ ...spec, modelName: 'o', inputs: [{ dtype: 'F32' as 'FP32', shape: [1] }] })).toThrow(/dtype must be one of/);
    expect(() => triton.bind({ ...spec, modelName: 'p', inferFunc: 42 as never })).toThrow(/inferFunc must be a function/);
  });
});

describe('output validation', () => {
  it('fails only the bad request with a 500 naming model, request and tensor', async () => {
    const triton = newTriton();
    triton.bind({
      modelName: 'bad',
      inferFunc: (rs: Request[]) => rs.map((r) => (r.id === 'wrong' ? { y: tensor('INT32', [1, 1], new Int32Array(1)) } : { y: tensor('FP32', [1, 1], new Float32Array(1)) })),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { maxBatchSize: 4 },
    });
    await triton.run();
    try {
      const url = `http://127.0.0.1:${triton.ports.http}/v2/models/bad/infer`;
      const body = (id: string) => `{"id":"${id}","inputs":[{"name":"x","datatype":"FP32","shape":[1,1],"data":[1]}]}`;
      const bad = await fetch(url, { method: 'POST', body: body('wrong') });
      expect(bad.status).toBe(500);
      expect(((await bad.json()) as { error: string }).error).toBe("[request id: wrong] model 'bad', output 'y': datatype is INT32, but the model declares FP32");
      expect((await fetch(url, { method: 'POST', body: body('fine') })).status).toBe(200);
    } finally {
      await triton.stop();
    }
  });
});

describe('UnrecoverableError', () => {
  it('fails its request, turns the server not ready, stops it, and serve() reports exit code 1', async () => {
    const triton = newTriton();
    const hold = gate();
    const entered = gate();
    triton.bind({
      modelName: 'fragile',
      // Two instances: one holds a request in flight, the other throws.
      inferFunc: [0, 1].map(() => async (rs: Request[]) => {
        if (rs[0]!.id === 'hold') {
          entered.open();
          await hold.promise;
          return rs.map(() => ({ y: tensor('FP32', [1], new Float32Array(1)) }));
        }
        throw new UnrecoverableError('device lost');
      }),
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { batching: false },
    });
    const exitCode = triton.serve();
    await new Promise<void>((resolve) => {
      const poll = () => (triton.ports.http ? resolve() : setImmediate(poll));
      poll();
    });
    const base = `http://127.0.0.1:${triton.ports.http}`;
    const body = (id: string) => `{"id":"${id}","inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}]}`;
    const held = fetch(`${base}/v2/models/fragile/infer`, { method: 'POST', body: body('hold') });
    await entered.promise;
    const failed = await fetch(`${base}/v2/models/fragile/infer`, { method: 'POST', body: body('boom') });
    expect(failed.status).toBe(500);
    expect(((await failed.json()) as { error: string }).error).toBe('device lost');
    expect((await fetch(`${base}/v2/health/ready`)).status).toBe(400);
    expect((await fetch(`${base}/v2/health/live`)).status).toBe(200);
    const refused = await fetch(`${base}/v2/models/fragile/infer`, { method: 'POST', body: body('late') });
    expect(refused.status).toBe(503);
    hold.open();
    expect((await held).status).toBe(200);
    expect(await exitCode).toBe(1);
    expect(process.exitCode).toBe(1);
    process.exitCode = 0;
    await expect(fetch(`${base}/v2/health/live`)).rejects.toThrow();
  });

  it('a plain error fails only its batch', async () => {
    const triton = newTriton();
    triton.bind({
      modelName: 'flaky',
      inferFunc: async (rs: Request[]) => {
        if (rs[0]!.id === 'bad') throw new TritonError('INVALID_ARGUMENT', 'no thanks');
        return rs.map(() => ({ y: tensor('FP32', [1], new Float32Array(1)) }));
      },
      inputs: [{ name: 'x', dtype: 'FP32', shape: [1] }],
      outputs: [{ name: 'y', dtype: 'FP32', shape: [1] }],
      config: { batching: false },
    });
    await triton.run();
    const url = `http://127.0.0.1:${triton.ports.http}/v2/models/flaky/infer`;
    const body = (id: string) => `{"id":"${id}","inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]}]}`;
    const bad = await fetch(url, { method: 'POST', body: body('bad') });
    expect(bad.status).toBe(400);
    expect((await fetch(url, { method: 'POST', body: body('ok') })).status).toBe(200);
    expect(triton.isReady()).toBe(true);
    await triton.stop();
  });
});
