// The onnxruntime session settings of Triton's onnxruntime backend in a repository's config.pbtxt
// (`parameters { key: "intra_op_thread_count" ... }`, `optimization { graph { level } }`) reach the sessions, show in
// the served config as written, and round-trip with onnxModel()'s options; values the backend would refuse, and
// settings onnxruntime-node cannot honour, fail the load naming the field.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Triton, onnxModel } from '../../lib';
import { formatModelConfigText, parseModelConfigText } from '../../lib/config/model-config-text';
import { scanRepositories } from '../../lib/repository/model-folder';
import { repositoryModel } from '../../lib/repository/repository-binding';
import { track } from '../helpers/resources';
import { ScratchRepository, indexEntry } from '../helpers/scratch-repository';
import { loopbackTriton } from '../helpers/loopback-triton';

const MATMUL = path.join(__dirname, '../fixtures/onnx/matmul_256.onnx');

const parameter = (key: string, value: string) => `parameters { key: "${key}" value: { string_value: "${value}" } }`;
const config = (...lines: string[]) => ['platform: "onnxruntime_onnx"', 'max_batch_size: 8', ...lines].join('\n');

/** The threads of this process: the server runs in it, and each onnxruntime session's intra-op pool is threads of it. */
const threads = () => fs.readdirSync('/proc/self/task').length;
// The worker threads compile tstriton's own .ts sources as they load (register-ts.js), with esbuild's sync API, which
// runs esbuild on a thread of its own that ends some time after: a thread that would count or not, as the machine
// is busy. Without worker threads esbuild runs its sync calls in a child process; worker threads take this copy of
// the environment when they start.
process.env.ESBUILD_WORKER_THREADS = '0';

describe('onnxruntime session settings in config.pbtxt', () => {
  let repo: ScratchRepository;
  let triton: Triton | undefined;
  let base: string;

  beforeEach(() => {
    repo = new ScratchRepository('tstriton-ort-options-');
  });

  afterEach(async () => {
    await triton?.stop();
    triton = undefined;
    repo.close();
  });

  const model = (name: string, text: string) => repo.model(name, MATMUL, text);

  async function start(explicit: boolean): Promise<void> {
    triton = track(loopbackTriton({ modelRepository: [repo.root], ...(explicit ? { modelControlMode: 'explicit' } : {}) }));
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
  }
  const load = async (name: string) => {
    const res = await fetch(`${base}/v2/repository/models/${name}/load`, { method: 'POST' });
    expect(res.status).toBe(200);
  };
  const configOf = async (name: string) => (await (await fetch(`${base}/v2/models/${name}/config`)).json()) as Record<string, unknown>;
  const reasonOf = (name: string) => indexEntry(base, name);
  const infer = async (name: string, x: number[]) => {
    const res = await fetch(`${base}/v2/models/${name}/infer`, { method: 'POST', body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 256], data: x }] }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
  };

  it('gives each session intra_op_thread_count threads, and serves the settings in the config as written', async () => {
    model('warm', config(parameter('intra_op_thread_count', '1')));
    model('one', config(parameter('intra_op_thread_count', '1')));
    const tuned = [
      parameter('intra_op_thread_count', '4'),
      parameter('execution_mode', '0'),
      parameter('enable_mem_arena', 'false'),
      parameter('enable_mem_pattern', 'off'),
      parameter('session.intra_op.allow_spinning', '0'),
      parameter('my_own_setting', 'kept'),
      'optimization { graph { level: 1 } }',
    ];
    model('four', config(...tuned));
    await start(true);
    // The first load starts what every later one shares (the addon, the thread pool of Node's file system calls).
    await load('warm');
    const before = threads();
    await load('one');
    const afterOne = threads();
    await load('four');
    const afterFour = threads();
    // Each load adds its worker thread; a session with N intra-op threads adds N - 1 more (the caller is the Nth).
    expect(afterFour - afterOne - (afterOne - before)).toBe(3);

    const served = await configOf('four');
    expect(served.parameters).toEqual({
      intra_op_thread_count: { string_value: '4' },
      execution_mode: { string_value: '0' },
      enable_mem_arena: { string_value: 'false' },
      enable_mem_pattern: { string_value: 'off' },
      'session.intra_op.allow_spinning': { string_value: '0' },
      my_own_setting: { string_value: 'kept' },
    });
    expect((served.optimization as Record<string, unknown>).graph).toEqual({ level: 1 });
    expect(Object.keys(served.optimization as object)[0]).toBe('graph');
    expect((await configOf('one')).optimization).not.toHaveProperty('graph');
    // Sessions with other settings compute the same product.
    const x = Array.from({ length: 256 }, (_, i) => Math.sin(i));
    expect(await infer('four', x)).toEqual(await infer('one', x));
  });

  it('refuses values Triton refuses, and settings onnxruntime-node cannot honour, naming the field', async () => {
    model('bad_threads', config(parameter('intra_op_thread_count', 'many')));
    model('bad_mode', config(parameter('execution_mode', '2')));
    model('bad_arena', config(parameter('enable_mem_arena', 'maybe')));
    model('shared', config(parameter('share_session_between_instances', 'true')));
    model('not_shared', config(parameter('share_session_between_instances', 'false')));
    model('shrinkage', config(parameter('memory.enable_memory_arena_shrinkage', 'cpu:0')));
    model('bad_level', config('optimization { graph { level: 5 } }'));
    await start(false);
    const reasons = {
      bad_threads: /field 'parameters\[intra_op_thread_count\]' must be a whole number of threads \(0: the default\), got 'many'/,
      bad_mode: /field 'parameters\[execution_mode\]' must be 0 \(sequential\) or 1 \(parallel\), got '2'/,
      bad_arena: /field 'parameters\[enable_mem_arena\]' must be a boolean .* got 'maybe'/,
      shared: /field 'parameters\[share_session_between_instances\]' cannot be true in tstriton: each instance runs its own onnxruntime session/,
      shrinkage: /field 'parameters\[memory.enable_memory_arena_shrinkage\]' cannot be honoured: it is an onnxruntime run config entry/,
      bad_level: /field 'optimization.graph.level' must be -1 \(basic\), 0 \(all, the default\), 1 \(extended\) or 2 \(disabled\), got 5/,
    };
    for (const [name, reason] of Object.entries(reasons)) {
      const entry = await reasonOf(name);
      expect([name, entry?.state]).toEqual([name, 'UNAVAILABLE']);
      expect(entry?.reason).toMatch(reason);
    }
    expect((await reasonOf('not_shared'))?.state).toBe('READY');
  });

  it("reports onnxModel()'s session options as the backend's parameters, which read back to the same options", async () => {
    triton = track(loopbackTriton({ allowHttp: false }));
    const options = {
      intraOpNumThreads: 2,
      interOpNumThreads: 3,
      executionMode: 'parallel',
      graphOptimizationLevel: 'basic',
      enableCpuMemArena: false,
      enableMemPattern: true,
      sessionConfig: { 'session.intra_op.allow_spinning': '0' },
    } as const;
    const bound = triton.bind({ modelName: 'bound', inferFunc: onnxModel({ path: MATMUL, maxBatchSize: 8, ...options }) }).configJson;
    expect(bound.parameters).toEqual({
      intra_op_thread_count: { string_value: '2' },
      inter_op_thread_count: { string_value: '3' },
      execution_mode: { string_value: '1' },
      enable_mem_arena: { string_value: '0' },
      enable_mem_pattern: { string_value: '1' },
      'session.intra_op.allow_spinning': { string_value: '0' },
    });
    expect((bound.optimization as Record<string, unknown>).graph).toEqual({ level: -1 });
    // The config as config.pbtxt, read back as a repository model: the same session options.
    repo.model('bound', MATMUL, formatModelConfigText(bound), path.basename(MATMUL));
    const file = path.join(repo.root, 'bound', 'config.pbtxt');
    const folder = scanRepositories([repo.root]).folders.get('bound')!;
    const binding = repositoryModel(folder, parseModelConfigText(folder.configText as string, file), file, false).bindings[0]!;
    const spec = binding.inferFunc as ReturnType<typeof onnxModel>;
    expect(spec.init).toMatchObject(options);
  });

  it('refuses session options onnxruntime-node would refuse only at load, at onnxModel()', () => {
    expect(() => onnxModel({ path: MATMUL, executionMode: 'branches' as never })).toThrow(/executionMode must be 'sequential' or 'parallel', got "branches"/);
    expect(() => onnxModel({ path: MATMUL, intraOpNumThreads: 1.5 })).toThrow(/intraOpNumThreads must be a whole number ≥ 0, got 1.5/);
    expect(() => onnxModel({ path: MATMUL, sessionConfig: { 'session.intra_op.allow_spinning': 0 as never } })).toThrow(
      /sessionConfig\['session.intra_op.allow_spinning'\] must be a string/,
    );
    expect(() => onnxModel({ path: MATMUL, graphOptimizationLevel: 'max' as never })).toThrow(/graphOptimizationLevel must be 'disabled', 'basic', 'extended' or 'all', got "max"/);
  });
});
