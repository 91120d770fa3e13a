import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Triton, TritonConfigInit } from 'tstriton';
import { loadProtos } from '../../lib/protocol/protos';
import { spawnTracked } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// The model repository's load API and config fields never lead outside the repository: model names, the files
// a load request sends, and the files a config names. A model folder beside the repository ("outside") holds
// code that writes a marker file when it is loaded; no test may make it run, and no file may appear outside.

// A test here may start two `tstriton serve` processes one after the other, each up to 30 s on a busy 2-core machine
// (measured at load 9): twice the project's timeout.
jest.setTimeout(120_000);

const services = loadProtos('number');
const KEY = { header: 'admin-key', value: 'secret' };
const RESTRICTED = `model-repository:${KEY.header}=${KEY.value}`;

/** A script model whose loading writes `marker` (the code that must never run), then echoes x as y. */
function scriptModel(marker?: string): string {
  return [
    marker === undefined ? '' : `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran');`,
    'module.exports = class Echo {',
    '  execute(requests) { return requests.map((r) => ({ y: { shape: r.inputs.x.shape, data: r.inputs.x.data } })); }',
    '};',
  ].join('\n');
}

const SCRIPT_CONFIG = {
  backend: 'tstriton',
  input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [-1] }],
  output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [-1] }],
};
const SCRIPT_PBTXT = 'backend: "tstriton"\ninput [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]\noutput [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n';

const LABELLED_PBTXT = SCRIPT_PBTXT.replace('output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]', 'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] label_filename: "labels.txt" } ]');

let work: string;
let repo: string;
let outside: string;
let triton: Triton | undefined;
let grpcClient: grpc.Client | undefined;

const ROOT = path.join(__dirname, '..', '..');
const CLI = ['--require', path.join(ROOT, 'lib/instances/worker/register-ts.js'), path.join(ROOT, 'lib/cli/main.ts')];

/**
 * `tstriton serve args` in a child process, once it logs "serving": its ports and every log line until then. The child
 * is tracked: stopped after the test whatever happens to it.
 */
function serveChild(args: string[]): Promise<{ child: ChildProcess; ports: Record<string, number>; lines: { level?: number; msg?: unknown }[] }> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
  const child = spawnTracked(process.execPath, [...CLI, 'serve', ...args, '--http-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--allow-metrics', 'false'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: { level?: number; msg?: unknown; ports?: Record<string, number> }[] = [];
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    let pending = '';
    child.stdout!.on('data', (c: Buffer) => {
      pending += c.toString();
      const complete = pending.split('\n');
      pending = complete.pop() ?? '';
      for (const text of complete) {
        const line = JSON.parse(text) as { level?: number; msg?: unknown; ports?: Record<string, number> };
        lines.push(line);
        if (line.msg === 'serving') resolve({ child, ports: line.ports ?? {}, lines });
      }
    });
    child.once('exit', (code) => reject(new Error(`the server exited with ${code} before serving: ${stderr}`)));
  });
}

const markers = () => fs.readdirSync(outside).filter((f) => f.startsWith('marker'));
/** The model name of the uploads in this file: other test files upload too, into the same temporary folder. */
const UP = 'uploaded_escapes';
/** The folders of this file's uploads in the temporary folder (jest's process.env cannot move it). */
const uploadFolders = () =>
  fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('tstriton-load-') && fs.existsSync(path.join(os.tmpdir(), f, UP)));
/** Those made since the test began. */
let uploadsBefore: string[] = [];
const uploads = () => uploadFolders().filter((f) => !uploadsBefore.includes(f));

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name))).sort();
}

beforeEach(() => {
  uploadsBefore = uploadFolders();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-escapes-'));
  repo = path.join(work, 'repo');
  outside = path.join(work, 'outsideC');
  for (const dir of [repo, outside]) fs.mkdirSync(dir, { recursive: true });
  for (const [name, marker] of [['evil', 'marker-evil'], ['evil2', 'marker-evil2']] as const) {
    fs.mkdirSync(path.join(outside, name, '1'), { recursive: true });
    fs.writeFileSync(path.join(outside, name, '1', 'model.js'), scriptModel(path.join(outside, marker)));
    fs.writeFileSync(path.join(outside, name, 'config.pbtxt'), SCRIPT_PBTXT);
  }
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'the secret\nsecond line\n');
  fs.mkdirSync(path.join(repo, 'good', '1'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'good', '1', 'model.js'), scriptModel());
  fs.writeFileSync(path.join(repo, 'good', 'config.pbtxt'), SCRIPT_PBTXT);
});

afterEach(async () => {
  grpcClient?.close();
  grpcClient = undefined;
  try {
    await triton?.stop();
  } finally {
    triton = undefined;
    fs.rmSync(work, { recursive: true, force: true });
  }
});

async function start(config: TritonConfigInit = {}): Promise<Triton> {
  triton = loopbackTriton({
    allowGrpc: true,
    modelRepository: [repo],
    modelControlMode: 'explicit',
    ...config,
  });
  await triton.run();
  grpcClient = new grpc.Client(`127.0.0.1:${triton.ports.grpc}`, grpc.credentials.createInsecure());
  return triton;
}

function post(p: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`http://127.0.0.1:${triton!.ports.http}${p}`, { method: 'POST', headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

/** A POST with an empty JSON body whose path goes on the wire exactly as given. */
function rawPost(p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: triton!.ports.http, method: 'POST', path: p, headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

async function errorOf(res: Response): Promise<string> {
  return ((await res.json()) as { error: string }).error;
}

async function indexNames(): Promise<string[]> {
  return ((await (await post('/v2/repository/index')).json()) as { name: string }[]).map((e) => e.name);
}

function rpc(method: string, request: object, metadata: Record<string, string> = {}): Promise<{ err?: grpc.ServiceError; value?: unknown }> {
  const def = services.inference[method] as grpc.MethodDefinition<object, unknown>;
  const md = new grpc.Metadata();
  for (const [k, v] of Object.entries(metadata)) md.set(k, v);
  return new Promise((resolve) => {
    grpcClient!.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, request, md, (err, value) => resolve(err ? { err } : { value }));
  });
}

const inferX = (model: string) => post(`/v2/models/${model}/infer`, { inputs: [{ name: 'x', datatype: 'FP32', shape: [2], data: [3, 4] }] });

describe('model names are one folder name', () => {
  const HTTP_NAMES = ['..%2FoutsideC%2Fevil', '%2e%2e%2FoutsideC%2Fevil', '%2E%2E%2foutsideC%2fevil', 'good%2F..%2F..%2FoutsideC%2Fevil', '..', '%2e%2e', '..%5CoutsideC%5Cevil', 'evil%00'];

  it.each(HTTP_NAMES)('HTTP load of %s is refused with 400 and runs, lists and writes nothing', async (name) => {
    await start();
    const before = filesUnder(work);
    // node:http sends the path as written (fetch would normalise '..' and '%2e%2e' away).
    const res = await rawPost(`/v2/repository/models/${name}/load`);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatch(/^failed to load '.*', failed to poll from model repository/);
    expect(markers()).toEqual([]);
    expect(await indexNames()).toEqual(['good']);
    expect(filesUnder(work)).toEqual(before);
  });

  it('HTTP load of an absolute path is refused and runs nothing', async () => {
    await start();
    const res = await post(`/v2/repository/models/${encodeURIComponent(path.join(outside, 'evil'))}/load`, {});
    expect(res.status).toBe(400);
    expect(markers()).toEqual([]);
    expect(await indexNames()).toEqual(['good']);
  });

  it.each(['../outsideC/evil', 'good/../../outsideC/evil', '..', 'ABS'])('gRPC RepositoryModelLoad of %s is refused with INVALID_ARGUMENT and runs nothing', async (raw) => {
    await start();
    const name = raw === 'ABS' ? path.join(outside, 'evil') : raw;
    const { err } = await rpc('RepositoryModelLoad', { model_name: name });
    expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err?.details).toMatch(/failed to poll from model repository/);
    expect(markers()).toEqual([]);
    expect(await indexNames()).toEqual(['good']);
  });

  it('a --load-model name that leads outside is refused at start and never runs', async () => {
    await start({ loadModel: ['../outsideC/evil', 'good'] });
    expect(markers()).toEqual([]);
    expect((await inferX('good')).status).toBe(200);
  });

  it('a valid name still loads', async () => {
    await start();
    expect((await post('/v2/repository/models/good/load', {})).status).toBe(200);
    expect((await inferX('good')).status).toBe(200);
  });
});

describe('files a load request sends', () => {
  const files = (content: string) => ({ config: JSON.stringify(SCRIPT_CONFIG), 'file:1/model.js': Buffer.from(content).toString('base64') });

  it("refuses a script model's code while the model-repository API is open, and writes nothing", async () => {
    await start();
    const res = await post(`/v2/repository/models/${UP}/load`, { parameters: files(scriptModel(path.join(outside, 'marker-upload'))) });
    expect(res.status).toBe(403);
    expect(await errorOf(res)).toMatch(/model-repository API needs a key on every port/);
    expect(markers()).toEqual([]);
    expect(uploads()).toEqual([]);
    const { err } = await rpc('RepositoryModelLoad', {
      model_name: UP,
      parameters: { config: { string_param: JSON.stringify(SCRIPT_CONFIG) }, 'file:1/model.js': { bytes_param: Buffer.from(scriptModel(path.join(outside, 'marker-upload'))) } },
    });
    expect(err?.code).toBe(grpc.status.UNAVAILABLE);
    expect(markers()).toEqual([]);
  });

  it('serves uploaded code once the API needs a key on both ports, and removes its files at stop', async () => {
    await start({ httpRestrictedApi: RESTRICTED, grpcRestrictedProtocol: RESTRICTED });
    const res = await post(`/v2/repository/models/${UP}/load`, { parameters: files(scriptModel()) }, { [KEY.header]: KEY.value });
    expect(res.status).toBe(200);
    expect((await inferX(UP)).status).toBe(200);
    expect(uploads()).toHaveLength(1);
    await triton!.stop();
    expect(uploads()).toEqual([]);
  });

  it.each(['../../escape1', '../escape2', 'ABS'])('a load of model %s with files is refused and writes nothing outside', async (raw) => {
    await start({ httpRestrictedApi: RESTRICTED, grpcRestrictedProtocol: RESTRICTED });
    const name = raw === 'ABS' ? path.join(work, 'escape3') : raw;
    // Where the files would land if the name were joined to an upload folder.
    const landing = path.join(path.resolve(os.tmpdir(), 'tstriton-load-x', name), '1', 'model.js');
    const landed = () => fs.statSync(landing, { throwIfNoEntry: false })?.mtimeMs;
    const landedBefore = landed();
    const before = filesUnder(work);
    const res = await post(`/v2/repository/models/${encodeURIComponent(name)}/load`, { parameters: files(scriptModel(path.join(outside, 'marker-x'))) }, { [KEY.header]: KEY.value });
    expect(res.status).toBe(400);
    const { err } = await rpc(
      'RepositoryModelLoad',
      { model_name: name, parameters: { config: { string_param: JSON.stringify(SCRIPT_CONFIG) }, 'file:1/model.js': { bytes_param: Buffer.from(scriptModel(path.join(outside, 'marker-x'))) } } },
      { [`triton-grpc-protocol-${KEY.header}`]: KEY.value },
    );
    expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(filesUnder(work)).toEqual(before);
    expect(landed()).toBe(landedBefore);
    expect(markers()).toEqual([]);
  });

  it.each(['..\\..\\x.js', '1/', '/abs/x.js', '1/../../x.js', '1//model.js', './1/model.js'])('file:%s is refused with 400 and leaves no folder', async (rel) => {
    await start({ httpRestrictedApi: RESTRICTED, grpcRestrictedProtocol: RESTRICTED });
    const res = await post(
      `/v2/repository/models/${UP}/load`,
      { parameters: { config: JSON.stringify(SCRIPT_CONFIG), [`file:${rel}`]: Buffer.from(scriptModel()).toString('base64') } },
      { [KEY.header]: KEY.value },
    );
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatch(/points outside the model folder/);
    expect(uploads()).toEqual([]);
    expect(fs.existsSync('/abs/x.js')).toBe(false);
  });

  it.each([
    ['bad base64', { config: JSON.stringify(SCRIPT_CONFIG), 'file:1/model.js': 'this is %% not base64!' }, /'file:1\/model.js' is not valid base64/],
    ['bad config JSON', { config: '{not json', 'file:1/model.js': Buffer.from(scriptModel()).toString('base64') }, /config parameter is not valid JSON/],
    ['an incomplete config', { config: JSON.stringify({ backend: 'tstriton' }), 'file:1/model.js': Buffer.from(scriptModel()).toString('base64') }, /input' is required/],
    ['code that does not compile', { config: JSON.stringify(SCRIPT_CONFIG), 'file:1/model.js': Buffer.from('module.exports = class {').toString('base64') }, /failed to load|Unexpected/],
  ])('%s: 400 naming the problem, and no folder left in TMPDIR', async (_what, parameters, message) => {
    await start({ httpRestrictedApi: RESTRICTED, grpcRestrictedProtocol: RESTRICTED });
    const res = await post(`/v2/repository/models/${UP}/load`, { parameters }, { [KEY.header]: KEY.value });
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatch(message);
    expect(uploads()).toEqual([]);
  });
});

describe('files a config names', () => {
  it.each([
    ['default_model_filename', { ...SCRIPT_CONFIG, default_model_filename: '../../../outsideC/evil2/1/model.js' }],
    ['label_filename', { ...SCRIPT_CONFIG, output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [-1], label_filename: '../../outsideC/secret.txt' }] }],
    [
      'data_file',
      {
        ...SCRIPT_CONFIG,
        sequence_batching: {
          control_input: [{ name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] }],
          state: [
            {
              input_name: 'INPUT_STATE',
              output_name: 'OUTPUT_STATE',
              data_type: 'TYPE_FP32',
              dims: [1],
              initial_state: [{ name: 'init', data_type: 'TYPE_FP32', dims: [1], data_file: '../../../outsideC/secret.txt' }],
            },
          ],
        },
      },
    ],
  ])('%s leading outside the model folder fails the load naming the field', async (field, config) => {
    fs.mkdirSync(path.join(repo, 'victim', '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'victim', '1', 'model.js'), scriptModel());
    fs.writeFileSync(path.join(repo, 'victim', 'config.pbtxt'), SCRIPT_PBTXT);
    await start();
    const res = await post('/v2/repository/models/victim/load', { parameters: { config: JSON.stringify(config) } });
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error).toContain(field);
    expect(error).toMatch(/outside the model's folder/);
    expect(error).not.toContain('the secret');
    expect(markers()).toEqual([]);
  });

  it('a label file that is a link to a file outside the model folder is refused (links are followed)', async () => {
    fs.mkdirSync(path.join(repo, 'linked', '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'linked', '1', 'model.js'), scriptModel());
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(repo, 'linked', 'labels.txt'));
    fs.writeFileSync(path.join(repo, 'linked', 'config.pbtxt'), LABELLED_PBTXT);
    await start();
    const res = await post('/v2/repository/models/linked/load', {});
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatch(/label_filename.*leads to .*secret\.txt, outside the model's folder/);
  });

  it('files inside the model folder still load (a label file beside config.pbtxt)', async () => {
    fs.mkdirSync(path.join(repo, 'labelled', '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'labelled', '1', 'model.js'), scriptModel());
    fs.writeFileSync(path.join(repo, 'labelled', 'labels.txt'), 'a\nb\n');
    fs.writeFileSync(path.join(repo, 'labelled', 'config.pbtxt'), LABELLED_PBTXT);
    await start();
    expect((await post('/v2/repository/models/labelled/load', {})).status).toBe(200);
  });
});

describe('a model folder that cannot be read', () => {
  it('a symbolic link loop refuses that model with its reason and serves the others', async () => {
    fs.mkdirSync(path.join(repo, 'loopy', '1'), { recursive: true });
    fs.writeFileSync(path.join(repo, 'loopy', '1', 'model.js'), scriptModel());
    fs.writeFileSync(path.join(repo, 'loopy', 'config.pbtxt'), SCRIPT_PBTXT);
    fs.symlinkSync('..', path.join(repo, 'loopy', '1', 'self'));
    await start({ modelControlMode: 'none' });
    expect((await inferX('good')).status).toBe(200);
    const index = (await (await post('/v2/repository/index')).json()) as { name: string; state: string; reason?: string }[];
    expect(index.find((e) => e.name === 'loopy')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringMatching(/symbolic link to a folder it is inside/) });
  });
});

/** Polls `check` until it holds or `ms` pass (a poll interval on a busy machine). */
async function waitFor(check: () => Promise<boolean>, ms = 30_000): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

describe('poll mode', () => {
  it('a config rewritten broken keeps the old model serving, and the index says why', async () => {
    await start({ modelControlMode: 'poll', repositoryPollSeconds: 1 });
    fs.writeFileSync(path.join(repo, 'good', 'config.pbtxt'), SCRIPT_PBTXT + 'bogus_field: 1\n');
    const entry = async () => ((await (await post('/v2/repository/index')).json()) as { name: string; state: string; reason?: string }[]).find((e) => e.name === 'good');
    expect(await waitFor(async () => (await entry())?.reason !== undefined)).toBe(true);
    expect(await entry()).toMatchObject({ state: 'READY', reason: expect.stringMatching(/the last load failed.*bogus_field/) });
    expect((await inferX('good')).status).toBe(200);
  });

  it('a model.js rewritten in place serves the new code after the poll', async () => {
    // In a process of its own: jest keeps modules in a registry of its own, which a server cannot reload from.
    const server = await serveChild(['--model-repository', repo, '--model-control-mode', 'poll', '--repository-poll-secs', '1']);
    const infer = async () => {
      const res = await fetch(`http://127.0.0.1:${server.ports.http}/v2/models/good/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [2], data: [3, 4] }] }) });
      return JSON.stringify(((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]?.data);
    };
    expect(await infer()).toBe('[3,4]');
    const file = path.join(repo, 'good', '1', 'model.js');
    fs.writeFileSync(file, scriptModel().replace('data: r.inputs.x.data', 'data: r.inputs.x.data.map((v) => v * 2)'));
    // A later modification time, so the poll sees the change even on a coarse clock.
    const later = new Date(Date.now() + 5_000);
    fs.utimesSync(file, later, later);
    expect(await waitFor(async () => (await infer()) === '[6,8]')).toBe(true);
  });
});

describe('model control at start', () => {
  it('warns when explicit mode serves the model-repository API without a key, and not once it needs one', async () => {
    const open = await serveChild(['--model-repository', repo, '--model-control-mode', 'explicit']);
    expect(open.lines.some((l) => l.level === 40 && /model-repository API open to every client/.test(String(l.msg)))).toBe(true);
    open.child.kill('SIGKILL');
    const keyed = await serveChild(['--model-repository', repo, '--model-control-mode', 'explicit', '--http-restricted-api', RESTRICTED, '--grpc-restricted-protocol', RESTRICTED]);
    expect(keyed.lines.some((l) => /model-repository API open/.test(String(l.msg)))).toBe(false);
    expect(keyed.lines.some((l) => l.msg === 'serving')).toBe(true);
  });
});
