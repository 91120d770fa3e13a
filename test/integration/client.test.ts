import * as grpc from '@grpc/grpc-js';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Triton, tensor, type TritonConfigInit } from 'tstriton';
import { ClientError, ModelClient } from 'tstriton/client';
import { batch, sample } from 'tstriton/decorators';
import { loadProtos } from '../../lib/protocol/protos';
import { Gate } from '../helpers/gate';
import { rejectionOf } from '../helpers/caught';
import { loopbackTriton } from '../helpers/loopback-triton';


const BASE: TritonConfigInit = { allowGrpc: true, strictReadiness: false };

let triton: Triton;
let gate: Gate;
const clients: ModelClient[] = [];

async function start(config: TritonConfigInit = {}): Promise<void> {
  gate = new Gate();
  triton = loopbackTriton({ ...BASE, ...config });
  triton.bind({
    modelName: 'add_sub',
    inferFunc: batch(async (inputs) => {
      const a = inputs.a!.data as Float32Array;
      const b = inputs.b!.data as Float32Array;
      return {
        add: tensor('FP32', inputs.a!.shape, a.map((v, i) => v + b[i]!)),
        sub: tensor('FP32', inputs.a!.shape, a.map((v, i) => v - b[i]!)),
      };
    }),
    inputs: [
      { name: 'a', dtype: 'FP32', shape: [-1] },
      { name: 'b', dtype: 'FP32', shape: [-1] },
    ],
    outputs: [
      { name: 'add', dtype: 'FP32', shape: [-1] },
      { name: 'sub', dtype: 'FP32', shape: [-1] },
    ],
    config: { maxBatchSize: 16 },
  });
  triton.bind({
    modelName: 'strings',
    inferFunc: sample(async (inputs, request) => ({
      out: {
        shape: inputs.text!.shape,
        data: (inputs.text!.data as Uint8Array[]).map((e) => `${String(request.parameters.prefix ?? '')}${Buffer.from(e).toString()}:${String(request.parameters.n ?? '')}`),
      },
      big: { shape: [1], data: BigInt64Array.of(BigInt(request.parameters.n ?? 0) + 1n) },
    })),
    inputs: [{ name: 'text', dtype: 'BYTES', shape: [-1] }],
    outputs: [
      { name: 'out', dtype: 'BYTES', shape: [-1] },
      { name: 'big', dtype: 'INT64', shape: [1] },
    ],
    config: { batching: false },
  });
  triton.bind({
    modelName: 'hang',
    inferFunc: gate.callable,
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
  });
  triton.bind({
    modelName: 'not_ready',
    inferFunc: gate.callable,
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
  });
  await triton.run();
  triton.repository.get('not_ready').state = 'LOADING';
}

function url(protocol: 'http' | 'grpc'): string {
  return `${protocol}://127.0.0.1:${protocol === 'http' ? triton.ports.http : triton.ports.grpc}`;
}

function client(protocol: 'http' | 'grpc', model: string, options?: ConstructorParameters<typeof ModelClient>[2]): ModelClient {
  const c = new ModelClient(url(protocol), model, options);
  clients.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<ClientError> {
  const err = await rejectionOf<ClientError>(p);
  expect(err).toBeInstanceOf(ClientError);
  return err;
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  gate?.open();
  await triton?.stop();
});

/** The status each protocol answers with, for one error-table code. */
const STATUS = {
  http: { invalid: 400, notReady: 404 },
  grpc: { invalid: grpc.status.INVALID_ARGUMENT, notReady: grpc.status.NOT_FOUND },
} as const;

describe.each(['http', 'grpc'] as const)('ModelClient over %s', (protocol) => {
  beforeEach(() => start());

  it('inferSample adds and strips the batch dimension', async () => {
    const out = await client(protocol, 'add_sub').inferSample({ a: Float32Array.of(1, 2, 3), b: Float32Array.of(10, 20, 30) });
    expect(Object.keys(out).sort()).toEqual(['add', 'sub']);
    expect(out.add).toEqual({ dtype: 'FP32', shape: [3], data: Float32Array.of(11, 22, 33) });
    expect(out.sub?.data).toEqual(Float32Array.of(-9, -18, -27));
  });

  it('inferBatch sends batches as they are, inputs by position, and returns only the outputs asked for', async () => {
    const a = tensor('FP32', [2, 2], Float32Array.of(1, 2, 3, 4));
    const b = { shape: [2, 2], data: Float32Array.of(1, 1, 1, 1) };
    const out = await client(protocol, 'add_sub').inferBatch([a, b], { outputs: ['sub'] });
    expect(Object.keys(out)).toEqual(['sub']);
    expect(out.sub).toEqual({ dtype: 'FP32', shape: [2, 2], data: Float32Array.of(0, 1, 2, 3) });
  });

  it('sends request parameters (string, BigInt beyond 2^53) to the callable, BYTES with NULs, to a non-batching model', async () => {
    const c = client(protocol, 'strings');
    const out = await c.inferSample({ text: ['a\0b', ''] }, { parameters: { prefix: '>', n: 2n ** 60n } });
    expect((out.out?.data as Uint8Array[]).map((e) => Buffer.from(e).toString())).toEqual([`>a\0b:${2n ** 60n}`, `>:${2n ** 60n}`]);
    expect(out.out?.shape).toEqual([2]);
    expect(out.big?.data).toEqual(BigInt64Array.of(2n ** 60n + 1n));
    await expect(c.inferBatch({ text: ['x'] })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/does not support batching/) });
  });

  it('returns the model config with the same content as the HTTP JSON, and the metadata', async () => {
    const c = client(protocol, 'add_sub');
    expect(await c.modelConfig()).toEqual(triton.repository.get('add_sub').configJson);
    expect(await c.modelMetadata()).toEqual(triton.repository.get('add_sub').metadata);
  });

  it('waits for the server and the model', async () => {
    const c = client(protocol, 'add_sub');
    await expect(c.waitForServer({ timeoutSeconds: 5 })).resolves.toBeUndefined();
    await expect(c.waitForModel({ timeoutSeconds: 5 })).resolves.toBeUndefined();
  });

  it('times out waiting for a model that is not ready, and waits until it turns ready', async () => {
    const c = client(protocol, 'not_ready');
    const err = await failure(c.waitForModel({ timeoutSeconds: 0.3 }));
    expect(err.code).toBe('DEADLINE_EXCEEDED');
    const waiting = c.waitForModel({ timeoutSeconds: 10 });
    triton.repository.find('not_ready').state = 'READY';
    await expect(waiting).resolves.toBeUndefined();
  });

  it("answers an unknown model at once with the server's error, instead of waiting for it to turn ready", async () => {
    // Ten minutes to wait: a client that waited would fail this test by its own timeout.
    const err = await failure(client(protocol, 'nope', { initTimeoutSeconds: 600 }).inferSample({ INPUT0: Float32Array.of(1) }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.status).toBe(STATUS[protocol].invalid);
    expect(err.message).toBe("Request for unknown model: 'nope' is not found");
    const wait = await failure(client(protocol, 'nope').waitForModel({ timeoutSeconds: 600 }));
    expect(wait.message).toBe("Request for unknown model: 'nope' is not found");
  });

  it('fails the first inference with DEADLINE_EXCEEDED when the model stays not ready past the init timeout', async () => {
    const err = await failure(client(protocol, 'not_ready', { initTimeoutSeconds: 0.3 }).inferSample({ INPUT0: Float32Array.of(1) }));
    expect(err.code).toBe('DEADLINE_EXCEEDED');
    expect(err.status).toBeUndefined();
  });

  it("reports the server's status for a model that is not ready when not waiting for it", async () => {
    const err = await failure(client(protocol, 'not_ready', { ensureModelIsReady: false }).inferSample({ INPUT0: Float32Array.of(1) }));
    expect(err.status).toBe(STATUS[protocol].notReady);
    expect(err.message).toBe("Request for unknown model: 'not_ready' has no available versions");
  });

  it("reports the server's status and message for an unknown model and a bad request", async () => {
    const unknown = await failure(client(protocol, 'nope').modelConfig());
    expect(unknown.status).toBe(STATUS[protocol].invalid);
    expect(unknown.code).toBe('INVALID_ARGUMENT');
    expect(unknown.message).toBe("Request for unknown model: 'nope' is not found");
    const bad = await failure(client(protocol, 'add_sub').inferBatch({ a: { shape: [2, 1], data: Float32Array.of(1, 2) }, b: { shape: [1, 1], data: Float32Array.of(1) } }));
    expect(bad.status).toBe(STATUS[protocol].invalid);
    expect(bad.message).toMatch(/input 'b' batch size 1 does not match the batch size 2/);
  });

  it('rejects inputs of the wrong container in the client, without a server status', async () => {
    const err = await failure(client(protocol, 'add_sub').inferSample({ a: Int32Array.of(1), b: Float32Array.of(1) }));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.status).toBeUndefined();
    expect(err.message).toMatch(/input 'a'.*Float32Array/);
  });

  it('fails a call past its timeout with DEADLINE_EXCEEDED, and the server aborts the work', async () => {
    const err = await failure(client(protocol, 'hang').inferSample({ INPUT0: Float32Array.of(1) }, { timeoutSeconds: 0.3 }));
    expect(err.code).toBe('DEADLINE_EXCEEDED');
    await expect(gate.aborted).resolves.toBeDefined();
  });

  it('fails an aborted call with CANCELLED, and the server aborts the work', async () => {
    const abort = new AbortController();
    const pending = client(protocol, 'hang').inferSample({ INPUT0: Float32Array.of(1) }, { signal: abort.signal });
    await gate.started;
    abort.abort(new Error('user gave up'));
    const err = await failure(pending);
    expect(err.code).toBe('CANCELLED');
    expect((err.cause as Error).message).toBe('user gave up');
    await expect(gate.aborted).resolves.toBeDefined();
  });

  it('fails with CANCELLED at once for a signal already aborted', async () => {
    const err = await failure(client(protocol, 'add_sub').inferSample({ a: Float32Array.of(1), b: Float32Array.of(1) }, { signal: AbortSignal.abort() }));
    expect(err.code).toBe('CANCELLED');
  });

  // Over HTTP the server gives in-flight requests a grace time after the exit timeout before it cuts them.
  it('fails with UNAVAILABLE when the server goes away mid-call', async () => {
    await triton.stop();
    await start({ exitTimeoutSeconds: 0.1 });
    const c = client(protocol, 'hang');
    const pending = c.inferSample({ INPUT0: Float32Array.of(1) });
    await gate.started;
    // stop() resolves once the transports have closed, by when the call has failed: watch it from now.
    const failed = failure(pending);
    await triton.stop();
    const err = await failed;
    expect(err.code).toBe('UNAVAILABLE');
  });

  it('refuses calls after close()', async () => {
    const c = client(protocol, 'add_sub');
    await c.inferSample({ a: Float32Array.of(1), b: Float32Array.of(1) });
    c.close();
    const err = await failure(c.inferSample({ a: Float32Array.of(1), b: Float32Array.of(1) }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toMatch(/closed/);
  });

  it('closes at the end of an await using scope ([Symbol.asyncDispose])', async () => {
    const c = client(protocol, 'add_sub');
    await c.inferSample({ a: Float32Array.of(1), b: Float32Array.of(1) });
    await c[Symbol.asyncDispose]();
    const err = await failure(c.inferSample({ a: Float32Array.of(1), b: Float32Array.of(1) }));
    expect(err.code).toBe('UNAVAILABLE');
    expect(err.message).toMatch(/closed/);
  });
});

describe('ModelClient without a server', () => {
  it.each(['http', 'grpc'] as const)('times out waiting for a %s server that is not there', async (protocol) => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((r) => probe.close(r));
    const c = new ModelClient(`${protocol}://127.0.0.1:${port}`, 'm');
    try {
      const err = await failure(c.waitForServer({ timeoutSeconds: 0.3 }));
      expect(err.code).toBe('DEADLINE_EXCEEDED');
      expect(err.message).toMatch(/server at .* was not ready within 0.3 s/);
    } finally {
      c.close();
    }
  });

  it("keeps a port that is the scheme's default (http://host:80), and uses 8000 only when none is written", async () => {
    const seen: string[] = [];
    const port80 = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200).end();
    });
    await new Promise<void>((resolve, reject) => port80.once('error', reject).listen(80, '127.0.0.1', resolve));
    const c = new ModelClient('http://127.0.0.1:80', 'm');
    try {
      await c.waitForServer({ timeoutSeconds: 5 });
      expect(seen).toContain('/v2/health/ready');
    } finally {
      c.close();
      await new Promise((resolve) => port80.close(resolve));
    }
  });

  it.each(['ftp://x:1', 'ws://x:1'])('rejects the URL %s', (u) => {
    expect(() => new ModelClient(u, 'm')).toThrow(/unsupported URL scheme/);
  });

  it('rejects a non-positive timeout', () => {
    expect(() => new ModelClient('http://127.0.0.1:1', 'm', { inferenceTimeoutSeconds: 0 })).toThrow(/inferenceTimeoutSeconds must be a positive number/);
  });
});

describe('ModelClient headers', () => {
  it('sends the client and per-call headers over HTTP', async () => {
    const seen: http.IncomingHttpHeaders[] = [];
    const server = http.createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const c = new ModelClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'm', { headers: { 'x-team': 'a' } });
    try {
      await c.waitForServer();
      expect(seen[0]?.['x-team']).toBe('a');
    } finally {
      c.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('sends the client headers as gRPC metadata', async () => {
    const seen: grpc.Metadata[] = [];
    const server = new grpc.Server();
    server.addService(loadProtos('string').inference, {
      ServerReady: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        seen.push(call.metadata);
        cb(null, { ready: true });
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    const c = new ModelClient(`grpc://127.0.0.1:${port}`, 'm', { headers: { 'x-team': 'b' } });
    try {
      await c.waitForServer();
      expect(seen[0]?.get('x-team')).toEqual(['b']);
    } finally {
      c.close();
      server.forceShutdown();
    }
  });
});
