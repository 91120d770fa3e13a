import * as grpc from '@grpc/grpc-js';
import * as nodeHttp from 'node:http';
import type { Triton, TritonConfigInit } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { loadProtos } from '../../lib/protocol/protos';
import { loopbackTriton } from '../helpers/loopback-triton';

// Restricted APIs (`httpRestrictedApi`, `grpcRestrictedProtocol`) and model control mode on real servers.

const BASE: TritonConfigInit = { allowGrpc: true };

const services = loadProtos('number');

let triton: Triton;
let grpcClient: grpc.Client | undefined;

async function start(config: TritonConfigInit): Promise<void> {
  triton = loopbackTriton({ ...BASE, ...config });
  triton.bind({
    modelName: 'double',
    inferFunc: batch(async ({ INPUT0 }) => ({ OUTPUT0: { ...INPUT0!, data: (INPUT0!.data as Float32Array).map((v) => v * 2) } })),
    inputs: [{ name: 'INPUT0', dtype: 'FP32', shape: [-1] }],
    outputs: [{ name: 'OUTPUT0', dtype: 'FP32', shape: [-1] }],
    config: { maxBatchSize: 8 },
  });
  await triton.run();
  grpcClient = new grpc.Client(`127.0.0.1:${triton.ports.grpc}`, grpc.credentials.createInsecure());
}

afterEach(async () => {
  grpcClient?.close();
  grpcClient = undefined;
  await triton?.stop();
});

function http(path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Response> {
  return fetch(`http://127.0.0.1:${triton.ports.http}${path}`, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
}

const INFER_BODY = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2], data: [1, 2] }] };

/** A unary RPC with `metadata`; resolves with the response or the error. */
function rpc(method: string, request: object, metadata: Record<string, string> = {}): Promise<{ err?: grpc.ServiceError; value?: unknown }> {
  const def = services.inference[method] as grpc.MethodDefinition<object, unknown>;
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    grpcClient!.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, md, (err, value) => resolve(err ? { err } : { value }));
  });
}

describe('model control mode', () => {
  it("refuses load and unload over HTTP and gRPC by default ('none'), with Triton's status and message", async () => {
    await start({});
    const unload = await http('/v2/repository/models/double/unload', { body: {} });
    expect(unload.status).toBe(503);
    expect(await unload.json()).toEqual({ error: 'explicit model load / unload is not allowed if polling is enabled' });
    expect((await http('/v2/repository/models/double/load', { body: {} })).status).toBe(503);
    const { err } = await rpc('RepositoryModelUnload', { model_name: 'double' });
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toBe('explicit model load / unload is not allowed if polling is enabled');
    // The model was never touched, and the index still answers.
    expect((await http('/v2/models/double/ready')).status).toBe(200);
    const index = (await (await http('/v2/repository/index', { body: {} })).json()) as { name: string; state: string }[];
    expect(index).toEqual([{ name: 'double', version: '1', state: 'READY' }]);
  });

  it("serves load and unload in 'explicit' mode", async () => {
    await start({ modelControlMode: 'explicit' });
    expect((await http('/v2/repository/models/double/unload', { body: {} })).status).toBe(200);
    expect((await http('/v2/models/double/ready')).status).toBe(400);
    expect((await rpc('RepositoryModelLoad', { model_name: 'double' })).err).toBeUndefined();
    expect((await http('/v2/models/double/ready')).status).toBe(200);
  });

  it('rejects an unknown mode at construction, naming the field', () => {
    expect(() => loopbackTriton({ ...BASE, modelControlMode: 'sometimes' as never })).toThrow(/modelControlMode must be one of none, explicit, poll/);
  });
});

describe('restricted APIs over HTTP', () => {
  beforeEach(() => start({ modelControlMode: 'explicit', httpRestrictedApi: 'model-repository,logging:admin-key=secret' }));

  it("refuses an unload without the header with 403 and Triton's message; the model stays ready", async () => {
    const res = await http('/v2/repository/models/double/unload', { body: {} });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: "This API is restricted, expecting header 'admin-key'" });
    const wrong = await http('/v2/repository/models/double/unload', { body: {}, headers: { 'admin-key': 'secreT' } });
    expect(wrong.status).toBe(403);
    expect((await http('/v2/models/double/ready')).status).toBe(200);
    expect(triton.repository.get('double').ready).toBe(true);
  });

  it('lets an unload with the header through', async () => {
    const res = await http('/v2/repository/models/double/unload', { body: {}, headers: { 'Admin-Key': 'secret' } });
    expect(res.status).toBe(200);
    expect(triton.repository.find('double').unloaded).toBe(true);
  });

  it('guards every route of a group, whatever the case of the path, and leaves other groups open', async () => {
    expect((await http('/v2/logging')).status).toBe(403);
    expect((await http('/v2/logging', { body: { log_info: false } })).status).toBe(403);
    expect((await http('/V2/REPOSITORY/INDEX', { body: {} })).status).toBe(403);
    expect((await http('/v2/repository/index', { body: {} })).status).toBe(403);
    expect((await http('/v2/logging', { headers: { 'admin-key': 'secret' } })).status).toBe(200);
    // Groups not named stay open.
    expect((await http('/v2/models/double/infer', { body: INFER_BODY })).status).toBe(200);
    expect((await http('/v2/models/double/config')).status).toBe(200);
    expect((await http('/v2/health/ready')).status).toBe(200);
  });
});

describe('restricted APIs: inference and the other groups', () => {
  it('guards the infer hot path and the model routes of each group', async () => {
    await start({
      httpRestrictedApi: 'inference:infer-key=i;model-config,statistics:admin=a;health,metadata:probe=p;trace:admin-trace=t;shared-memory:shm=s',
    });
    const cases: [string, string, unknown, string][] = [
      ['/v2/models/double/infer', 'POST', INFER_BODY, 'infer-key'],
      ['/v2/models/double/versions/1/infer', 'POST', INFER_BODY, 'infer-key'],
      ['/v2/models/double/config', 'GET', undefined, 'admin'],
      ['/v2/models/double/stats', 'GET', undefined, 'admin'],
      ['/v2/models/stats', 'GET', undefined, 'admin'],
      ['/v2/health/live', 'GET', undefined, 'probe'],
      ['/v2/models/double/ready', 'GET', undefined, 'probe'],
      ['/v2', 'GET', undefined, 'probe'],
      ['/v2/models/double', 'GET', undefined, 'probe'],
      ['/v2/trace/setting', 'GET', undefined, 'admin-trace'],
      ['/v2/models/double/trace/setting', 'GET', undefined, 'admin-trace'],
      ['/v2/systemsharedmemory/status', 'GET', undefined, 'shm'],
      ['/v2/cudasharedmemory/status', 'GET', undefined, 'shm'],
    ];
    for (const [path, method, body, header] of cases) {
      const res = await http(path, { method, body });
      expect([path, res.status, await res.json()]).toEqual([path, 403, { error: `This API is restricted, expecting header '${header}'` }]);
    }
    const ok = await http('/v2/models/double/infer', { body: INFER_BODY, headers: { 'infer-key': 'i' } });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data).toEqual([2, 4]);
    // Logging and the repository were not named: open.
    expect((await http('/v2/logging')).status).toBe(200);
  });

  it('rejects bad specifications at construction, as Triton refuses to start', () => {
    expect(() => loopbackTriton({ ...BASE, httpRestrictedApi: 'model-reposit:k=v' })).toThrow(/unknown restricted api 'model-reposit'/);
    expect(() => loopbackTriton({ ...BASE, httpRestrictedApi: 'logging:a=1;logging,trace:b=2' })).toThrow(/'logging' can not be specified in multiple config groups/);
    expect(() => loopbackTriton({ ...BASE, httpRestrictedApi: 'logging' })).toThrow(/not of the form <api>\[,<api>...\]:<key>=<value>/);
    expect(() => loopbackTriton({ ...BASE, grpcRestrictedProtocol: 'inference:bad key=1' })).toThrow(/grpcRestrictedProtocol: 'bad key' is not a valid header name/);
  });
});

describe('restricted protocols over gRPC', () => {
  beforeEach(() => start({ modelControlMode: 'explicit', grpcRestrictedProtocol: 'model-repository,logging:admin-key=secret' }));

  it("refuses an unload without the metadata with UNAVAILABLE and Triton's message; the model stays ready", async () => {
    const { err } = await rpc('RepositoryModelUnload', { model_name: 'double' });
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(err?.details).toBe("This protocol is restricted, expecting header 'triton-grpc-protocol-admin-key'");
    const wrong = await rpc('RepositoryModelUnload', { model_name: 'double' }, { 'triton-grpc-protocol-admin-key': 'nope' });
    expect(wrong.err?.code).toBe(grpc.status.UNAVAILABLE);
    expect((await rpc('ModelReady', { name: 'double' })).value).toEqual({ ready: true });
    // The HTTP side has no restriction of its own.
    expect((await http('/v2/logging')).status).toBe(200);
  });

  it('lets an unload with the metadata through, and guards the group on every RPC', async () => {
    expect((await rpc('LogSettings', {})).err?.code).toBe(grpc.status.UNAVAILABLE);
    expect((await rpc('RepositoryIndex', {})).err?.code).toBe(grpc.status.UNAVAILABLE);
    expect((await rpc('ServerMetadata', {})).err).toBeUndefined();
    const { err } = await rpc('RepositoryModelUnload', { model_name: 'double' }, { 'triton-grpc-protocol-admin-key': 'secret' });
    expect(err).toBeUndefined();
    expect(triton.repository.find('double').unloaded).toBe(true);
  });

  it('ends a restricted stream with UNAVAILABLE before reading it', async () => {
    await triton.stop();
    grpcClient?.close();
    await start({ grpcRestrictedProtocol: 'inference:infer-key=k' });
    const def = services.inference.ModelStreamInfer as grpc.MethodDefinition<object, unknown>;
    const stream = grpcClient!.makeBidiStreamRequest(def.path, def.requestSerialize, def.responseDeserialize);
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      stream.on('data', () => {});
      stream.on('error', () => {});
      stream.on('status', resolve);
    });
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
    expect(status.details).toBe("This protocol is restricted, expecting header 'triton-grpc-protocol-infer-key'");
  });
});

/**
 * One request with `target` sent as it is (fetch drops a fragment before sending; node:http does not), on its own
 * connection; resolves with the status and the body.
 */
function rawRequest(port: number, method: string, target: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = nodeHttp.request(
      { host: '127.0.0.1', port, method, path: target, agent: false, headers: { ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('a request target with a fragment', () => {
  beforeEach(() => start({ httpRestrictedApi: 'statistics,model-config,trace,inference:admin-key=secret', openai: true, openaiPort: 0 }));

  const FRAGMENT_ERROR = /malformed request target .*a fragment \('#'\) is not part of an HTTP request target/;

  it('is refused 400 before the restricted-API check and any route, on every restricted route', async () => {
    const port = triton.ports.http!;
    const cases: [string, string, unknown][] = [
      ['GET', '/v2/models/double/stats#frag', undefined],
      ['GET', '/v2/models/stats#frag', undefined],
      ['GET', '/v2/models/double/versions/1/stats#frag', undefined],
      ['GET', '/v2/models/double/stats#', undefined],
      ['GET', '/v2/models/double\\stats#frag', undefined],
      ['GET', 'http://127.0.0.1/v2/models/double/stats#frag', undefined],
      ['GET', '/v2/models/double/config#frag', undefined],
      ['GET', '/v2/trace/setting#frag', undefined],
      ['GET', '/v2/models/double/trace/setting#frag', undefined],
      ['POST', '/v2/models/double/infer#frag', INFER_BODY],
      ['POST', '/v2/models/double/versions/1/infer#frag', INFER_BODY],
      ['GET', '/v2/health/ready#frag', undefined],
    ];
    for (const [method, target, body] of cases) {
      // Without the key, and with it: the target itself is malformed.
      for (const headers of [{}, { 'admin-key': 'secret' }] as Record<string, string>[]) {
        const res = await rawRequest(port, method, target, body, headers);
        expect([method, target, res.status]).toEqual([method, target, 400]);
        expect(res.text).not.toContain('model_stats');
        expect(res.text).not.toContain('max_batch_size');
        expect(res.text).not.toContain('trace_level');
        expect((JSON.parse(res.text) as { error: string }).error).toMatch(FRAGMENT_ERROR);
      }
    }
    // Nothing ran: the infer requests never reached the model.
    const stats = await rawRequest(port, 'GET', '/v2/models/double/stats', undefined, { 'admin-key': 'secret' });
    expect(stats.status).toBe(200);
    expect((JSON.parse(stats.text) as { model_stats: { inference_count: number }[] }).model_stats[0]!.inference_count).toBe(0);
    // The same targets without the fragment still pass through the check.
    expect((await rawRequest(port, 'GET', '/v2/models/double/stats')).status).toBe(403);
    expect((await rawRequest(port, 'GET', '/v2/models/double/stats?x=#')).status).toBe(400);
  });

  it('is refused 400 in OpenAI\'s error shape on /v1, on the HTTP port and the OpenAI port', async () => {
    for (const port of [triton.ports.http!, triton.ports.openai!]) {
      for (const [method, target, body] of [
        ['GET', '/v1/models#frag', undefined],
        ['POST', '/v1/chat/completions#frag', { model: 'double', messages: [{ role: 'user', content: 'hi' }] }],
      ] as const) {
        const res = await rawRequest(port, method, target, body);
        expect([port, target, res.status]).toEqual([port, target, 400]);
        const { error } = JSON.parse(res.text) as { error: { message: string; type: string } };
        expect(error.type).toBe('invalid_request_error');
        expect(error.message).toMatch(FRAGMENT_ERROR);
      }
    }
    // A non-/v1 target on the OpenAI port is refused for its fragment too, before its 404.
    expect((await rawRequest(triton.ports.openai!, 'GET', '/v2/models/double/stats#frag')).status).toBe(400);
  });
});
