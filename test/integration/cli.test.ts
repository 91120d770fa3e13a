import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FLAGS } from '../../lib/cli/flags';
import { flagUsage } from '../../lib/cli/help';
import { parseModelConfigText } from '../../lib/config/model-config-text';
import { exitingWithParent, track } from '../helpers/resources';
import { spawnServing, type ServingChild } from '../helpers/serving-child';

// The `tstriton` command line in a process of its own, run from the sources with the TypeScript hook (jest does not
// build dist/; `bin` points at the same file compiled). Servers listen on port 0 and are found through the
// "serving" log line, which names every bound port.
// A test here runs up to two such processes one after the other, each 30-35 s to serve on a 2-core machine at
// load 9 (measured): twice the project's timeout.
jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];
const ONNX = join(ROOT, 'test/fixtures/onnx/identity_fp32.onnx');
const FIXTURES = join(ROOT, 'test/fixtures/cli');

/** Triton's own flag names that the command line must take as they are. */
const TRITON_FLAGS = [
  '--model-repository', '--http-port', '--grpc-port', '--metrics-port', '--http-address', '--grpc-address', '--metrics-address',
  '--allow-http', '--allow-grpc', '--allow-metrics', '--model-control-mode', '--load-model', '--repository-poll-secs',
  '--strict-model-config', '--strict-readiness', '--exit-timeout-secs', '--log-verbose', '--log-info', '--log-warning',
  '--log-error', '--http-restricted-api', '--grpc-restricted-protocol', '--grpc-use-ssl', '--grpc-use-ssl-mutual',
  '--grpc-server-cert', '--grpc-server-key', '--grpc-root-cert', '--response-cache-byte-size', '--cache-config', '--trace-file',
];

/** The environment without the caller's TSTRITON_* variables, plus `extra`. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
  return { ...env, ...extra };
}

function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...CLI, ...args], { cwd: ROOT, env: exitingWithParent(cleanEnv(env)) }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
    });
    track(child);
  });
}

type Server = ServingChild;

/** Starts `tstriton serve ...` and resolves with the ports of its "serving" line. */
function startServer(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Server> {
  return spawnServing([...CLI, 'serve', ...args, '--http-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0'], { cwd: ROOT, env: cleanEnv(env) });
}

async function infer(port: number, model: string, data: number[]): Promise<{ status: number; outputs?: { name: string; data: number[] }[] }> {
  const body = { inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, data.length], data }] };
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, ...((await res.json()) as object) };
}

describe('tstriton --help and --version', () => {
  it('lists every flag of the table and every Triton flag, with their variables', async () => {
    const { code, stdout } = await runCli(['--help']);
    expect(code).toBe(0);
    for (const f of FLAGS) expect(stdout).toContain(flagUsage(f));
    for (const name of TRITON_FLAGS) expect(stdout).toContain(`${name} `);
    for (const name of TRITON_FLAGS) expect(stdout).toContain(`Triton ${name}`);
    expect(stdout).toContain('TSTRITON_HTTP_PORT · default 8000 · Triton --http-port');
  });

  it('lists the flags of serve in serve --help', async () => {
    const { code, stdout } = await runCli(['serve', '--help']);
    expect(code).toBe(0);
    for (const f of FLAGS.filter((f) => f.commands.includes('serve'))) expect(stdout).toContain(flagUsage(f));
  });

  it('prints the version', async () => {
    const { code, stdout } = await runCli(['--version']);
    expect(code).toBe(0);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(stdout).toBe(`tstriton ${pkg.version}\n`);
  });
});

describe('tstriton refuses', () => {
  it.each<[string[], NodeJS.ProcessEnv, string]>([
    [['serve', '--foo'], {}, 'tstriton: unknown flag --foo (see tstriton --help)'],
    [['serve', '--http-port', 'abc', ONNX], {}, 'tstriton: --http-port expects an integer, got "abc"'],
    [['serve', '--http-port', '70000', ONNX], {}, 'tstriton: --http-port must not be greater than 65535, got 70000'],
    [['serve', ONNX], { TSTRITON_HTTP_PORT: 'abc' }, 'tstriton: invalid TSTRITON_HTTP_PORT: expected a number, got "abc"'],
    [['serve'], {}, 'tstriton: nothing to serve: give --model-repository, --module or an .onnx file (see tstriton serve --help)'],
  ])('%j %j with one line and exit code 2', async (args, env, line) => {
    const { code, stdout, stderr } = await runCli(args, env);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(`${line}\n`);
  });
});

describe('tstriton config', () => {
  it('prints the config.pbtxt of an .onnx file, which parses back', async () => {
    const { code, stdout, stderr } = await runCli(['config', ONNX, '--name', 'ident', '--max-batch-size', '8']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('max_batch_size: 8');
    expect(stdout).toMatch(/name: "INPUT0"\s+data_type: TYPE_FP32/);
    expect(stdout).toMatch(/name: "OUTPUT0"\s+data_type: TYPE_FP32/);
    const config = parseModelConfigText(stdout, 'config.pbtxt');
    expect(config).toMatchObject({
      name: 'ident',
      platform: 'onnxruntime_onnx',
      max_batch_size: 8,
      input: [{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: [16] }],
      output: [{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: [16] }],
    });
  });

  it('prints a GPU instance and the provider --gpu-execution-provider (or its variable) names', async () => {
    const flag = await runCli(['config', ONNX, '--device', 'gpu:0', '--gpu-execution-provider', 'webgpu']);
    expect(flag.stderr).toBe('');
    expect(flag.code).toBe(0);
    expect(flag.stdout).toMatch(/execution_accelerators \{\s+gpu_execution_accelerator \{\s+name: "webgpu"\s+\}\s+\}/);
    expect(parseModelConfigText(flag.stdout, 'config.pbtxt')).toMatchObject({
      instance_group: [{ kind: 'KIND_GPU', count: 1, gpus: [0] }],
      optimization: { execution_accelerators: { gpu_execution_accelerator: [{ name: 'webgpu' }] } },
    });
    const variable = await runCli(['config', ONNX, '--device', 'gpu:0'], { TSTRITON_GPU_EXECUTION_PROVIDER: 'cuda' });
    expect(variable.code).toBe(0);
    expect(variable.stdout).toMatch(/gpu_execution_accelerator \{\s+name: "cuda"\s+\}/);
    // WebGPU serves the first GPU only.
    const second = await runCli(['config', ONNX, '--device', 'gpu:1', '--gpu-execution-provider', 'webgpu']);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain('the WebGPU execution provider runs on the first GPU only');
  });
});

describe('tstriton serve on a GPU without a GPU', () => {
  it('exits 1 with the message that names both providers and what each needs', async () => {
    const { code, stderr } = await runCli(['serve', ONNX, '--device', 'gpu:0', '--http-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0']);
    expect(code).toBe(1);
    expect(stderr).toContain("tstriton: failed to load model 'identity_fp32': instance identity_fp32_0 failed to start: cannot run");
    expect(stderr).toContain('on gpu:0: neither GPU execution provider (CUDA, WebGPU) can start. CUDA: ');
    expect(stderr).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node');
    expect(stderr).toContain('WebGPU: ');
    expect(stderr).toContain('libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libgles2 libopengl0');
  });
});

describe('tstriton serve', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    // An .onnx file and two modules in one server; the variables give what no flag overrides.
    server = await startServer(
      [ONNX, '--name', 'ident', '--module', join(FIXTURES, 'models.ts'), '--module', join(FIXTURES, 'named-bind.js'), '--server-version', 'from-flag'],
      { TSTRITON_SERVER_VERSION: 'from-env', TSTRITON_ALLOW_METRICS: 'false', TSTRITON_HTTP_PORT: '1' },
    );
    port = server.ports.http as number;
  });

  // If beforeAll failed, `server` is unset and the tracked child is stopped after the file.
  afterAll(async () => {
    if (!server) return;
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('is ready and serves the .onnx file', async () => {
    expect((await fetch(`http://127.0.0.1:${port}/v2/health/ready`)).status).toBe(200);
    const data = Array.from({ length: 16 }, (_, i) => i / 2);
    const res = await infer(port, 'ident', data);
    expect(res.status).toBe(200);
    expect(res.outputs?.[0]).toMatchObject({ name: 'OUTPUT0', data });
  });

  it('serves the models of a TypeScript module and of a CommonJS module', async () => {
    expect((await infer(port, 'double', [1, 2, 3])).outputs?.[0]?.data).toEqual([2, 4, 6]);
    expect((await infer(port, 'negate', [1, 2, 3])).outputs?.[0]?.data).toEqual([-1, -2, -3]);
  });

  it('takes a flag over its variable, and a variable alone', async () => {
    const meta = (await (await fetch(`http://127.0.0.1:${port}/v2`)).json()) as { version: string };
    expect(meta.version).toBe('from-flag');
    expect(Object.keys(server.ports).sort()).toEqual(['grpc', 'http']);
  });
});

describe('tstriton serve --model-repository', () => {
  let dir: string;
  let server: Server | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tstriton-cli-'));
  });

  afterAll(async () => {
    server?.child.kill('SIGTERM');
    if (server) expect(await server.exited).toBe(0);
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a repository started from the config command', async () => {
    // The recipe of docs/cli.md: the file in <name>/1/ under its own name, the printed config beside it.
    mkdirSync(join(dir, 'identity_fp32', '1'), { recursive: true });
    copyFileSync(ONNX, join(dir, 'identity_fp32', '1', 'identity_fp32.onnx'));
    const printed = await runCli(['config', ONNX]);
    expect(printed.code).toBe(0);
    writeFileSync(join(dir, 'identity_fp32', 'config.pbtxt'), printed.stdout);
    server = await startServer([], { TSTRITON_MODEL_REPOSITORY: dir });
    const data = Array.from({ length: 16 }, (_, i) => i);
    const res = await infer(server.ports.http as number, 'identity_fp32', data);
    expect(res.status).toBe(200);
    expect(res.outputs?.[0]?.data).toEqual(data);
  });
});
