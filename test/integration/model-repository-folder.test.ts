import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Triton, type TritonConfigInit } from '../../lib';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

const IDENTITY = path.join(__dirname, '../fixtures/onnx/identity_fp32.onnx');
const SCRIPT = path.join(__dirname, '../fixtures/repository/scale_model.ts');

/** A script model that answers after 300 ms, to have requests in flight. */
const SLOW_CONFIG = [
  'backend: "tstriton"',
  'version_policy: { all { } }',
  'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]',
  'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]',
  'parameters { key: "delay_ms" value: { string_value: "300" } }',
].join('\n');

/** A Triton-layout repository in a temp folder, built file by file. */
class RepoDir {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-repo-'));
  write(rel: string, content: string | Buffer): void {
    const file = path.join(this.root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
  identity(rel: string): void {
    this.write(rel, fs.readFileSync(IDENTITY));
  }
  remove(rel: string): void {
    fs.rmSync(path.join(this.root, rel), { recursive: true, force: true });
  }
  close(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

interface IndexEntry {
  name: string;
  version: string;
  state: string;
  reason?: string;
}

describe('serving a model repository folder', () => {
  let repo: RepoDir;
  let triton: Triton | undefined;
  let base: string;

  beforeEach(() => {
    repo = new RepoDir();
  });

  // Stopped here, before its folder goes; track() in start() stops it even when this hook did not get to it.
  afterEach(async () => {
    await triton?.stop();
    triton = undefined;
    repo.close();
  });

  async function start(config: TritonConfigInit = {}): Promise<Triton> {
    triton = track(loopbackTriton({ modelRepository: [repo.root], ...config }));
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
    return triton;
  }
  const get = async (p: string) => fetch(`${base}${p}`);
  const json = async (p: string) => (await (await get(p)).json()) as Record<string, unknown>;
  const post = (p: string, body?: unknown) => fetch(`${base}${p}`, { method: 'POST', body: body === undefined ? undefined : JSON.stringify(body) });
  const index = async () => (await (await post('/v2/repository/index')).json()) as IndexEntry[];
  const inferIdentity = (model: string, version?: number) =>
    post(`/v2/models/${model}${version ? `/versions/${version}` : ''}/infer`, {
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i) }],
    });

  it('serves the versions the policy chooses, lists them in metadata, and reports the policy in the config', async () => {
    for (const v of [1, 2, 3]) repo.identity(`ident/${v}/model.onnx`);
    repo.write('ident/config.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 8\nversion_policy: { latest { num_versions: 2 } }\ndynamic_batching { max_queue_delay_microseconds: 100 }\n');
    await start();
    expect((await json('/v2/models/ident')).versions).toEqual(['2', '3']);
    expect((await get('/v2/models/ident/versions/1/ready')).status).toBe(400);
    for (const v of [2, 3]) {
      const res = await inferIdentity('ident', v);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { model_version: string; outputs: { data: number[] }[] };
      expect(body.model_version).toBe(String(v));
      expect(body.outputs[0]?.data).toEqual(Array.from({ length: 16 }, (_, i) => i));
    }
    expect(((await (await inferIdentity('ident')).json()) as { model_version: string }).model_version).toBe('3');
    const config = await json('/v2/models/ident/config');
    expect(config.version_policy).toEqual({ latest: { num_versions: 2 } });
    expect(config.max_batch_size).toBe(8);
    expect((config.dynamic_batching as Record<string, unknown>).max_queue_delay_microseconds).toBe(100);
    expect(config.input).toEqual([expect.objectContaining({ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] })]);
  });

  it('completes a model with no config.pbtxt from its ONNX signature, and refuses it under strict model config', async () => {
    repo.identity('bare/1/model.onnx');
    await start();
    const config = await json('/v2/models/bare/config');
    expect(config.platform).toBe('onnxruntime_onnx');
    expect(config.max_batch_size).toBe(4);
    expect(config.dynamic_batching).toBeDefined();
    expect(config.output).toEqual([expect.objectContaining({ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] })]);
    expect((await inferIdentity('bare')).status).toBe(200);
    await triton?.stop();

    await start({ strictModelConfig: true, strictReadiness: false });
    const entry = (await index()).find((e) => e.name === 'bare');
    expect(entry?.state).toBe('UNAVAILABLE');
    expect(entry?.reason).toMatch(/config\.pbtxt is missing, and auto-complete is disabled \(--disable-auto-complete-config or --strict-model-config\)/);
  });

  it('reshapes ONNX inputs and outputs between the dims clients use and the dims the model takes', async () => {
    repo.identity('grid/1/model.onnx');
    repo.write(
      'grid/config.pbtxt',
      [
        'platform: "onnxruntime_onnx"',
        'max_batch_size: 4',
        'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4, 4 ] reshape: { shape: [ 16 ] } } ]',
        'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 2, 8 ] reshape: { shape: [ 16 ] } } ]',
      ].join('\n'),
    );
    repo.identity('wrong/1/model.onnx');
    repo.write('wrong/config.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4, 5 ] reshape: { shape: [ 16 ] } } ]\n');
    await start({ strictReadiness: false });
    const data = Array.from({ length: 32 }, (_, i) => i);
    const res = await post('/v2/models/grid/infer', { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2, 4, 4], data }] });
    expect(res.status).toBe(200);
    const out = ((await res.json()) as { outputs: { shape: number[]; data: number[] }[] }).outputs[0];
    expect(out?.shape).toEqual([2, 2, 8]);
    expect(out?.data).toEqual(data);
    expect(((await json('/v2/models/grid/config')).input as Record<string, unknown>[])[0]?.reshape).toEqual({ shape: [16] });
    expect((await index()).find((e) => e.name === 'wrong')?.reason).toMatch(/dims \[4,5\] and reshape \[16\] do not hold the same number of elements/);
  });

  it('serves a model.ts script model with the class it exports', async () => {
    repo.write('scale/1/model.ts', fs.readFileSync(SCRIPT));
    repo.write(
      'scale/config.pbtxt',
      [
        'backend: "tstriton"',
        'max_batch_size: 0',
        'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]',
        'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]',
        'parameters { key: "factor" value: { string_value: "3" } }',
        'instance_group [ { kind: KIND_CPU count: 2 } ]',
      ].join('\n'),
    );
    await start();
    const res = await post('/v2/models/scale/infer', { inputs: [{ name: 'x', datatype: 'FP32', shape: [3], data: [1, 2, 3] }] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]?.data).toEqual([3, 6, 9]);
    const config = await json('/v2/models/scale/config');
    expect(config.backend).toBe('tstriton');
    expect(config.instance_group).toEqual([expect.objectContaining({ kind: 'KIND_CPU', count: 2 })]);
  });

  it('serves an ensemble wired in config.pbtxt over repository models', async () => {
    repo.identity('ident/1/model.onnx');
    repo.write('pipe/1/.keep', '');
    repo.write(
      'pipe/config.pbtxt',
      [
        'platform: "ensemble"',
        'max_batch_size: 4',
        'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 16 ] } ]',
        'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 16 ] } ]',
        'ensemble_scheduling { step [ { model_name: "ident" model_version: -1 input_map { key: "INPUT0" value: "IN" } output_map { key: "OUTPUT0" value: "OUT" } } ] }',
      ].join('\n'),
    );
    await start();
    const res = await post('/v2/models/pipe/infer', { inputs: [{ name: 'IN', datatype: 'FP32', shape: [1, 16], data: Array.from({ length: 16 }, (_, i) => i * 2) }] });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]?.data).toEqual(Array.from({ length: 16 }, (_, i) => i * 2));
  });

  it('fails a broken model with a reason naming the file, line or field, and serves the others', async () => {
    repo.identity('good/1/model.onnx');
    repo.identity('unsupported/1/model.onnx');
    repo.write('unsupported/config.pbtxt', 'platform: "onnxruntime_onnx"\nmodel_operations { op_library_filename: "custom.so" }\n');
    repo.identity('syntax/1/model.onnx');
    repo.write('syntax/config.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\ninput [ { name: "INPUT0" \n');
    repo.write('nofile/1/.keep', '');
    repo.write('nofile/config.pbtxt', 'platform: "onnxruntime_onnx"\nmax_batch_size: 4\n');
    await start({ strictReadiness: false });
    const entries = await index();
    const reason = (name: string) => entries.find((e) => e.name === name)?.reason ?? '';
    expect(reason('unsupported')).toMatch(/unsupported[/\\]config\.pbtxt.*field 'model_operations' is not supported/);
    expect(reason('syntax')).toMatch(/syntax[/\\]config\.pbtxt:\d+:\d+/);
    expect(reason('nofile')).toMatch(/nofile[/\\]1[/\\]model\.onnx does not exist/);
    for (const name of ['unsupported', 'syntax', 'nofile']) expect(entries.find((e) => e.name === name)?.state).toBe('UNAVAILABLE');
    expect(entries.find((e) => e.name === 'good')?.state).toBe('READY');
    expect((await inferIdentity('good')).status).toBe(200);
    expect((await get('/v2/health/ready')).status).toBe(200);
    await triton?.stop();
    // Under strict readiness (the default), a failed model keeps the server out of rotation, as in Triton.
    await start();
    expect((await get('/v2/health/ready')).status).toBe(400);
  });

  it('explicit mode: loads only the named models, loads another on request, takes a config override', async () => {
    repo.identity('first/1/model.onnx');
    repo.identity('second/1/model.onnx');
    await start({ modelControlMode: 'explicit', loadModel: ['first'] });
    expect((await get('/v2/models/first/ready')).status).toBe(200);
    expect((await index()).find((e) => e.name === 'second')).toEqual({ name: 'second', version: '', state: '' });
    expect((await post('/v2/repository/models/second/load')).status).toBe(200);
    expect((await get('/v2/models/second/ready')).status).toBe(200);
    const override = JSON.stringify({ platform: 'onnxruntime_onnx', max_batch_size: 2 });
    expect((await post('/v2/repository/models/second/load', { parameters: { config: override } })).status).toBe(200);
    expect((await json('/v2/models/second/config')).max_batch_size).toBe(2);
    const bad = await post('/v2/repository/models/second/load', { parameters: { config: JSON.stringify({ max_batch_size: 2, bogus: 1 }) } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/field 'bogus' is not supported/);
    // The failed load left the served version as it was.
    expect((await json('/v2/models/second/config')).max_batch_size).toBe(2);
    expect((await inferIdentity('second')).status).toBe(200);
  });

  // Triton's index lists what the repositories hold and what was loaded. A load of any other name answers its 400 and
  // leaves nothing behind: otherwise each such request adds an entry for good (and, under strict readiness, takes the
  // server out of rotation). On two front-end threads too, where the loads arrive through both threads.
  it.each([1, 2])('explicit mode: failed loads of names in no repository leave the index as it was (%i front-end threads)', async (threads) => {
    repo.identity('served/1/model.onnx');
    repo.identity('broken/1/model.onnx');
    repo.write('broken/config.pbtxt', 'platform: "onnxruntime_onnx"\nmodel_operations { op_library_filename: "custom.so" }\n');
    await start({ modelControlMode: 'explicit', loadModel: ['served'], httpThreadCount: threads });
    const before = await index();
    expect(before).toEqual([
      { name: 'broken', version: '', state: '' },
      { name: 'served', version: '1', state: 'READY' },
    ]);
    // Each on a connection of its own (fetch opens one per request in flight), so both threads take some.
    const absent = Array.from({ length: 100 }, (_, i) => post(`/v2/repository/models/absent_${i}/load`));
    // A request's files for a name in no repository, with a config that does not load: refused, and not listed.
    const upload = post('/v2/repository/models/uploaded_bad/load', {
      parameters: { config: JSON.stringify({ platform: 'onnxruntime_onnx', bogus: 1 }), 'file:1/model.onnx': fs.readFileSync(IDENTITY).toString('base64') },
    });
    for (const res of await Promise.all(absent)) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(/^failed to load 'absent_\d+', failed to poll from model repository$/);
    }
    const refused = await upload;
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: string }).error).toMatch(/field 'bogus' is not supported/);
    expect(await index()).toEqual(before);
    expect((await get('/v2/health/ready')).status).toBe(200);
    // A model the repository holds that fails to load stays listed, with its reason, as in Triton.
    expect((await post('/v2/repository/models/broken/load')).status).toBe(400);
    const after = await index();
    expect(after.map((e) => e.name)).toEqual(['broken', 'served']);
    expect(after[0]).toMatchObject({ name: 'broken', state: 'UNAVAILABLE', reason: expect.stringMatching(/field 'model_operations' is not supported/) as unknown });
  });

  it('explicit mode: a load with file: content serves the model it brings', async () => {
    await start({ modelControlMode: 'explicit' });
    const body = {
      parameters: {
        config: JSON.stringify({ platform: 'onnxruntime_onnx', max_batch_size: 4 }),
        'file:1/model.onnx': fs.readFileSync(IDENTITY).toString('base64'),
      },
    };
    expect((await post('/v2/repository/models/uploaded/load', body)).status).toBe(200);
    expect((await inferIdentity('uploaded')).status).toBe(200);
    const loadFolders = () => fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('tstriton-load-')).sort();
    const before = loadFolders();
    const outside = await post('/v2/repository/models/evil/load', { parameters: { config: '{}', 'file:../../x.onnx': 'AAAA' } });
    expect(outside.status).toBe(400);
    expect(((await outside.json()) as { error: string }).error).toMatch(/points outside the model folder/);
    // The refused load left no folder of its own behind.
    expect(loadFolders().filter((f) => !before.includes(f))).toEqual([]);
  });

  it('explicit mode: a model a load request brought stays listed, with why, when a later load of it fails', async () => {
    await start({ modelControlMode: 'explicit' });
    const upload = (config: object) =>
      post('/v2/repository/models/uploaded/load', { parameters: { config: JSON.stringify(config), 'file:1/model.onnx': fs.readFileSync(IDENTITY).toString('base64') } });
    expect((await upload({ platform: 'onnxruntime_onnx', max_batch_size: 4 })).status).toBe(200);
    expect((await upload({ platform: 'onnxruntime_onnx', bogus: 1 })).status).toBe(400);
    // In no repository, but loaded: the index keeps it, and says why the last load failed, as for a repository model.
    expect((await index()).filter((e) => e.name === 'uploaded')).toEqual([
      { name: 'uploaded', version: '1', state: 'READY', reason: expect.stringMatching(/^the last load failed, .*field 'bogus' is not supported/) as unknown },
    ]);
    expect((await inferIdentity('uploaded')).status).toBe(200);
  });

  it('explicit mode: an unload lets the requests in flight finish, then the model is gone', async () => {
    repo.write('slow/1/model.ts', fs.readFileSync(SCRIPT));
    repo.write('slow/config.pbtxt', SLOW_CONFIG);
    await start({ modelControlMode: 'explicit', loadModel: ['slow'] });
    const inFlight = post('/v2/models/slow/infer', { inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [7] }] });
    await new Promise((r) => setTimeout(r, 50));
    const unloaded = post('/v2/repository/models/slow/unload');
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { outputs: { data: number[] }[] }).outputs[0]?.data).toEqual([7]);
    expect((await unloaded).status).toBe(200);
    expect((await get('/v2/models/slow/ready')).status).toBe(400);
    expect((await index()).find((e) => e.name === 'slow')).toMatchObject({ state: 'UNAVAILABLE', reason: 'unloaded' });
  });

  it('poll mode: the first poll pass after a version is added on disk loads it, with no load request', async () => {
    repo.identity('grows/1/model.onnx');
    repo.write('grows/config.pbtxt', 'platform: "onnxruntime_onnx"\nversion_policy: { all { } }\n');
    const server = await start({ modelControlMode: 'poll', repositoryPollSeconds: 0.5 });
    // Each pass of the server's own poll loop is counted, and the versions of 'grows' that serve when it ends are
    // noted: the promise of the poll mode, that a change on disk serves from the next poll on, read by count.
    const control = (server as unknown as { repositories: { poll(): Promise<void> } }).repositories;
    const poll = control.poll.bind(control);
    const servedAfterPass: string[][] = [];
    let passes = 0;
    control.poll = async () => {
      const pass = passes++;
      await poll();
      servedAfterPass[pass] = server.repository
        .versionsOf('grows')
        .filter((m) => m.ready)
        .map((m) => m.version);
    };
    expect((await json('/v2/models/grows')).versions).toEqual(['1']);
    expect((await get('/v2/models/grows/versions/3/ready')).status).not.toBe(200);
    // A pass reads the folders when it starts, in one synchronous step: the first pass to start after this write
    // is the first that can see version 3.
    repo.identity('grows/3/model.onnx');
    const firstPassAfter = passes;
    // Nothing but reads from here on: the poll loop alone has to bring version 3 in.
    await waitFor(async () => (await get('/v2/models/grows/versions/3/ready')).status === 200);
    await waitFor(async () => servedAfterPass[firstPassAfter] !== undefined);
    expect(servedAfterPass.slice(0, firstPassAfter).filter((served) => served.includes('3'))).toEqual([]);
    expect(servedAfterPass[firstPassAfter]).toEqual(['1', '3']);
    expect((await json('/v2/models/grows')).versions).toEqual(['1', '3']);
    expect((await inferIdentity('grows', 3)).status).toBe(200);
  });

  it('poll mode: a new version is served after a poll, and a removed one lets its requests finish', async () => {
    repo.write('slow/1/model.ts', fs.readFileSync(SCRIPT));
    repo.write('slow/config.pbtxt', SLOW_CONFIG);
    await start({ modelControlMode: 'poll', repositoryPollSeconds: 0.1 });
    expect((await json('/v2/models/slow')).versions).toEqual(['1']);
    repo.write('slow/2/model.ts', fs.readFileSync(SCRIPT));
    await waitFor(async () => (await get('/v2/models/slow/versions/2/ready')).status === 200);
    expect((await json('/v2/models/slow')).versions).toEqual(['1', '2']);
    const inFlight = post('/v2/models/slow/versions/2/infer', { inputs: [{ name: 'x', datatype: 'FP32', shape: [1], data: [5] }] });
    await new Promise((r) => setTimeout(r, 50));
    repo.remove('slow/2');
    await waitFor(async () => (await get('/v2/models/slow/versions/2/ready')).status !== 200);
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(((await answered.json()) as { outputs: { data: number[] }[] }).outputs[0]?.data).toEqual([5]);
    expect((await json('/v2/models/slow')).versions).toEqual(['1']);
  });
});

/** Polls `check` until it holds (the poll interval is 0.1 s; a broken server fails the test by jest's timeout). */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((r) => setTimeout(r, 25));
}
