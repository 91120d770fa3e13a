import * as fs from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Triton, BoundModel, Request, Response } from 'tstriton';
import { loadProtos } from '../../lib/protocol/protos';
import type { ModelInferRequestMessage } from '../../lib/protocol/messages';
import { rejectionOf } from '../helpers/caught';
import { loopbackTriton } from '../helpers/loopback-triton';
import { ScratchRepository } from '../helpers/scratch-repository';

// A model the server knows but cannot serve now (unloaded, failed to load, still loading) is answered as Triton
// answers it, over HTTP and gRPC, for inference, metadata and config: 404 / NOT_FOUND when the request names no
// version and none is ready, 404 / NOT_FOUND for a version the model does not have, 503 / UNAVAILABLE for a version
// it has that is not ready; a name never known stays 400 / INVALID_ARGUMENT. A repository model whose versions
// failed to build is known too (Triton keeps them in its model life cycle, unavailable); one whose config is not
// valid, or that was never loaded in explicit mode, is not.
// Served on the core thread (httpThreadCount 1) and on two front-end threads, which answer from the state the core
// publishes to them.

/** A repository script model: y = x * factor (the config's `factor`). */
const SCRIPT = join(__dirname, '../fixtures/repository/scale_model.ts');
const SCRIPT_CONFIG = [
  'backend: "tstriton"',
  'max_batch_size: 0',
  'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]',
  'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]',
  'parameters { key: "factor" value: { string_value: "3" } }',
].join('\n');
/** A config.pbtxt that does not parse. */
const BROKEN_CONFIG = 'backend: "tstriton"\ninput [ { name: "x" \n';
/** A model.ts that fails as it loads. */
const BROKEN_SCRIPT = "throw new Error('this model does not load');\n";

const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }], config: { batching: false } };

/** Multiplies `x` by its factor, once `initialize()` is let through. */
class Scaled {
  private release!: () => void;
  private readonly released: Promise<void>;

  constructor(
    private readonly factor: number,
    held = false,
  ) {
    this.released = new Promise((r) => (this.release = r));
    if (!held) this.release();
  }

  /** Lets a held `initialize()` finish: the model turns ready. */
  letLoad(): void {
    this.release();
  }

  async initialize(): Promise<void> {
    await this.released;
  }

  async infer(requests: Request[]): Promise<Response[]> {
    return requests.map((r) => ({ y: { dtype: 'FP32', shape: r.inputs.x!.shape, data: (r.inputs.x!.data as Float32Array).map((v) => v * this.factor) } }));
  }
}

/** A model whose load fails. */
const broken = {
  async initialize(): Promise<void> {
    throw new Error('weights missing');
  },
  async infer(): Promise<Response[]> {
    throw new Error('never runs');
  },
};

const services = loadProtos('number');

interface Answer {
  status: number;
  body: { error?: string; outputs?: { data: number[] }[]; name?: string; versions?: string[] };
}

describe.each([
  ['on the core thread (httpThreadCount 1)', 1],
  ['on two front-end threads (httpThreadCount 2)', 2],
])('a model that is known but not ready, %s', (_label, threads) => {
  let triton: Triton | undefined;
  let client: grpc.Client | undefined;
  let base: string;
  let repo: ScratchRepository;

  beforeEach(async () => {
    // `badconfig` and `badcode` fail to load at start (`loadModel`); `later` is not loaded until a test asks.
    repo = new ScratchRepository();
    repo.model('badconfig', SCRIPT, BROKEN_CONFIG, 'model.ts');
    for (const name of ['badcode', 'later']) {
      repo.model(name, SCRIPT, SCRIPT_CONFIG, 'model.ts');
      fs.writeFileSync(join(repo.root, name, '1', 'model.ts'), BROKEN_SCRIPT);
    }
    triton = loopbackTriton({
      allowGrpc: true,
      httpThreadCount: threads,
      modelControlMode: 'explicit',
      modelRepository: [repo.root],
      loadModel: ['badconfig', 'badcode'],
      exitOnError: false,
      strictReadiness: false,
    });
    triton.bind({ modelName: 'm', inferFunc: new Scaled(1), ...io });
    triton.bind({ modelName: 'broken', inferFunc: broken, ...io });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
    client = new grpc.Client(`127.0.0.1:${triton.ports.grpc}`, grpc.credentials.createInsecure());
  });

  afterEach(async () => {
    client?.close();
    await triton?.stop();
    triton = undefined;
    client = undefined;
    repo.close();
  });

  const answer = async (res: globalThis.Response): Promise<Answer> => ({ status: res.status, body: (await res.json()) as Answer['body'] });
  const path = (model: string, version?: string) => `${base}/v2/models/${model}${version === undefined ? '' : `/versions/${version}`}`;
  const infer = async (model: string, version?: string) =>
    answer(await fetch(`${path(model, version)}/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [2], data: [1, 2] }] }) }));
  const metadata = async (model: string, version?: string) => answer(await fetch(path(model, version)));
  const config = async (model: string, version?: string) => answer(await fetch(`${path(model, version)}/config`));
  const ready = async (model: string, version?: string) => (await fetch(`${path(model, version)}/ready`)).status;

  /** One unary gRPC call, as a foreign client makes it. */
  const call = <Res>(rpc: string, request: object): Promise<Res> => {
    const def = services.inference[rpc] as grpc.MethodDefinition<object, Res>;
    return new Promise<Res>((resolve, reject) => {
      (client as grpc.Client).makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, (err, value) => (err ? reject(err) : resolve(value as Res)));
    });
  };
  const grpcInfer = (model: string, version = ''): ModelInferRequestMessage => ({
    model_name: model,
    model_version: version,
    inputs: [{ name: 'x', datatype: 'FP32', shape: [2] }],
    raw_input_contents: [Buffer.from(Float32Array.of(1, 2).buffer)],
  });
  /** The gRPC status and message each of ModelInfer, ModelMetadata and ModelConfig fails with. */
  const grpcRefusals = async (model: string, version = '') =>
    Promise.all(
      [call('ModelInfer', grpcInfer(model, version)), call('ModelMetadata', { name: model, version }), call('ModelConfig', { name: model, version })].map(async (p) => {
        const err = await rejectionOf<grpc.ServiceError>(p);
        return [err.code, err.details];
      }),
    );
  /** The HTTP status and error of infer, metadata and config. */
  const httpRefusals = async (model: string, version?: string) =>
    (await Promise.all([infer(model, version), metadata(model, version), config(model, version)])).map((a) => [a.status, a.body.error]);

  /** Expects infer, metadata and config to fail with `message`: `http` over HTTP, `code` over gRPC. */
  const refusedEverywhere = async (model: string, version: string | undefined, http: number, code: grpc.status, message: string): Promise<void> => {
    expect(await httpRefusals(model, version)).toEqual([0, 1, 2].map(() => [http, message]));
    expect(await grpcRefusals(model, version)).toEqual([0, 1, 2].map(() => [code, message]));
  };

  /** Waits for a model version bound while the server runs to finish loading. */
  const loaded = async (handle: BoundModel): Promise<void> => {
    while (handle.state === 'LOADING') await new Promise((r) => setTimeout(r, 5));
  };

  it('answers a model whose versions are all unloaded with 404 / NOT_FOUND, and a version of it with 503 / UNAVAILABLE', async () => {
    expect((await infer('m')).body.outputs?.[0]?.data).toEqual([1, 2]);
    expect((await fetch(`${base}/v2/repository/models/m/unload`, { method: 'POST' })).status).toBe(200);

    await refusedEverywhere('m', undefined, 404, grpc.status.NOT_FOUND, "Request for unknown model: 'm' has no available versions");
    await refusedEverywhere('m', '1', 503, grpc.status.UNAVAILABLE, "Request for unknown model: 'm' version 1 is not at ready state");
    await refusedEverywhere('m', '9', 404, grpc.status.NOT_FOUND, "Request for unknown model: 'm' version 9 is not found");

    // The readiness endpoints keep their answers: 400 over HTTP, ready false over gRPC; statistics answer in the
    // words of Triton's.
    expect([await ready('m'), await ready('m', '1')]).toEqual([400, 400]);
    expect(await call('ModelReady', { name: 'm', version: '' })).toEqual({ ready: false });
    expect(await answer(await fetch(`${path('m')}/stats`))).toEqual({ status: 400, body: { error: "requested model 'm' is not available" } });

    // Loaded again, it serves again everywhere.
    expect((await fetch(`${base}/v2/repository/models/m/load`, { method: 'POST' })).status).toBe(200);
    expect((await infer('m')).body.outputs?.[0]?.data).toEqual([1, 2]);
    expect((await metadata('m')).body.versions).toEqual(['1']);
    expect(await ready('m')).toBe(200);
  });

  it('answers a model whose load failed with 404 / NOT_FOUND, and a name never known with 400 / INVALID_ARGUMENT', async () => {
    await refusedEverywhere('broken', undefined, 404, grpc.status.NOT_FOUND, "Request for unknown model: 'broken' has no available versions");
    await refusedEverywhere('broken', '1', 503, grpc.status.UNAVAILABLE, "Request for unknown model: 'broken' version 1 is not at ready state");
    expect(await ready('broken')).toBe(400);

    await refusedEverywhere('nope', undefined, 400, grpc.status.INVALID_ARGUMENT, "Request for unknown model: 'nope' is not found");
    await refusedEverywhere('nope', '1', 400, grpc.status.INVALID_ARGUMENT, "Request for unknown model: 'nope' is not found");
    expect(await ready('nope')).toBe(400);
  });

  it('answers a repository model whose versions failed to build as a known model, until a load serves it; one whose config is not valid as unknown', async () => {
    // Its config valid, its version failed to build at start: known, the version there but not ready.
    await refusedEverywhere('badcode', undefined, 404, grpc.status.NOT_FOUND, "Request for unknown model: 'badcode' has no available versions");
    await refusedEverywhere('badcode', '1', 503, grpc.status.UNAVAILABLE, "Request for unknown model: 'badcode' version 1 is not at ready state");
    await refusedEverywhere('badcode', '2', 404, grpc.status.NOT_FOUND, "Request for unknown model: 'badcode' version 2 is not found");
    expect(await ready('badcode')).toBe(400);
    expect(await answer(await fetch(`${path('badcode')}/stats`))).toEqual({ status: 400, body: { error: "requested model 'badcode' is not available" } });

    // A config that does not parse never reaches Triton's model life cycle: the name is not known, before or after
    // a load request fails on it again.
    await refusedEverywhere('badconfig', undefined, 400, grpc.status.INVALID_ARGUMENT, "Request for unknown model: 'badconfig' is not found");
    expect((await fetch(`${base}/v2/repository/models/badconfig/load`, { method: 'POST' })).status).toBe(400);
    await refusedEverywhere('badconfig', '1', 400, grpc.status.INVALID_ARGUMENT, "Request for unknown model: 'badconfig' is not found");

    // In the repository but never loaded (explicit mode): not known, as in Triton; a load whose version fails to
    // build makes it known on every thread by the time the load is answered.
    await refusedEverywhere('later', undefined, 400, grpc.status.INVALID_ARGUMENT, "Request for unknown model: 'later' is not found");
    expect((await fetch(`${base}/v2/repository/models/later/load`, { method: 'POST' })).status).toBe(400);
    await refusedEverywhere('later', undefined, 404, grpc.status.NOT_FOUND, "Request for unknown model: 'later' has no available versions");
    await refusedEverywhere('nope', undefined, 400, grpc.status.INVALID_ARGUMENT, "Request for unknown model: 'nope' is not found");

    // Its code fixed, a load serves it; unloaded, it is a known model with no ready version like any other. (The
    // fixed code is a file of another name: under jest, the model.ts that failed as it loaded is not read again,
    // where a server of its own, outside jest, loads the changed file.)
    fs.copyFileSync(SCRIPT, join(repo.root, 'later', '1', 'fixed.ts'));
    fs.writeFileSync(join(repo.root, 'later', 'config.pbtxt'), `${SCRIPT_CONFIG}\ndefault_model_filename: "fixed.ts"`);
    expect((await fetch(`${base}/v2/repository/models/later/load`, { method: 'POST' })).status).toBe(200);
    expect((await infer('later')).body.outputs?.[0]?.data).toEqual([3, 6]);
    expect((await metadata('later')).body.versions).toEqual(['1']);
    expect((await fetch(`${base}/v2/repository/models/later/unload`, { method: 'POST' })).status).toBe(200);
    await refusedEverywhere('later', undefined, 404, grpc.status.NOT_FOUND, "Request for unknown model: 'later' has no available versions");
  });

  it('sends a request naming no version to the highest ready version while a higher one loads', async () => {
    const second = new Scaled(2, true);
    const handle = (triton as Triton).bind({ modelName: 'm', modelVersion: 2, inferFunc: second, ...io });
    expect(handle.state).toBe('LOADING');

    expect((await infer('m')).body.outputs?.[0]?.data).toEqual([1, 2]);
    const served = await call<{ raw_output_contents: Uint8Array[] }>('ModelInfer', grpcInfer('m'));
    expect(Buffer.from(served.raw_output_contents[0] as Uint8Array).equals(Buffer.from(Float32Array.of(1, 2).buffer))).toBe(true);
    expect(await metadata('m')).toEqual({ status: 200, body: expect.objectContaining({ name: 'm', versions: ['1'] }) });
    await refusedEverywhere('m', '2', 503, grpc.status.UNAVAILABLE, "Request for unknown model: 'm' version 2 is not at ready state");
    expect(await ready('m', '2')).toBe(400);

    second.letLoad();
    await loaded(handle);
    expect(handle.state).toBe('READY');
    expect((await infer('m')).body.outputs?.[0]?.data).toEqual([2, 4]);
    expect((await infer('m', '1')).body.outputs?.[0]?.data).toEqual([1, 2]);
    expect((await metadata('m')).body.versions).toEqual(['1', '2']);
    expect(await ready('m', '2')).toBe(200);
  });
});
