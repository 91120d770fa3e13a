/**
 * The package's public surface, as a user's project sees it: the declarations the build emits for each entry point
 * (with tsconfig.build.json's options, `stripInternal` among them).
 *
 * - The root exports exactly the documented API (listed below, and in docs/api.md, which lists every entry point).
 * - Every package the reachable declarations import is a Node builtin or a package.json dependency that ships its
 *   own types: none needs a dev-only `@types/*` package (as `express` did through `triton.http`).
 * - A strict consumer (skipLibCheck false, no esModuleInterop) that uses every entry point type-checks against them,
 *   with nothing but the dependencies and `@types/node` installed, and sees neither internals nor a mutable handle.
 */
import * as fs from 'node:fs';
import { builtinModules } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const MANIFEST = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
  exports: Record<string, { types: string } | string>;
};

/** Entry points: the subpath and its source. */
const ENTRIES: Record<string, string> = {
  tstriton: 'lib/index.ts',
  'tstriton/decorators': 'decorators/index.ts',
  'tstriton/client': 'lib/client/index.ts',
  'tstriton/config': 'lib/config/index.ts',
};

/** The documented root API (docs/api.md); a name added to or taken from `lib/index.ts` must change this list. */
const ROOT_EXPORTS = [
  // The server.
  'Triton', 'capMallocArenas', 'BindOptions', 'BoundModel', 'RunOptions', 'HttpRouter', 'RouteHandler', 'RouteRequest', 'RouteResponse', 'TritonConfig', 'TritonConfigInit',
  // Callables.
  'Request', 'Response', 'InferCallable', 'DecoupledCallable', 'StreamItem', 'InferCall', 'OutputValue', 'ParameterValue', 'ResponseParameters', 'SequenceInfo',
  'RESPONSE_PARAMETERS', 'withParameters', 'InferFunc', 'LifecycleHooks', 'instanceFactory', 'InstanceFactory', 'InstanceTarget', 'InstanceContext', 'Device',
  'DeviceKind', 'CustomMetrics', 'MetricFamilySpec', 'MetricKind', 'CustomMetricFamily', 'CustomMetric', 'ChatTemplate', 'ChatMessage', 'ScriptModel', 'ScriptModelArgs',
  // What inferFunc can be besides a callable.
  'workers', 'WorkersInit', 'WorkerOptions', 'WorkerSpec', 'onnxModel', 'OnnxModelInit', 'OnnxModelSpec', 'OnnxSessionOptions', 'OnnxExecutionMode', 'OnnxGraphOptimizationLevel', 'ensemble', 'EnsembleSpec', 'EnsembleStep',
  // Model config.
  'TensorSpec', 'TensorSpecInit', 'ModelConfig', 'ModelConfigInit', 'DynamicBatcher', 'DynamicBatcherInit', 'QueuePolicy', 'QueuePolicyInit', 'WarmupSetting',
  'WarmupSettingInit', 'SequenceBatching', 'SequenceBatchingInit', 'ModelConfigJson',
  // Tensors and errors.
  'tensor', 'Tensor', 'DataType', 'TensorData', 'DATA_TYPES', 'TritonError', 'UnrecoverableError', 'ErrorCode',
];

/** A consumer that uses every entry point, as a user's strict project would. */
const CONSUMER = `
import { Triton, tensor, type BoundModel, type RouteHandler, type Tensor } from 'tstriton';
import { batch } from 'tstriton/decorators';
import { ModelClient } from 'tstriton/client';
import { toPbtxt } from 'tstriton/config';

const triton = new Triton({ httpPort: 0 });
const bound: BoundModel = triton.bind({
  modelName: 'add_one',
  inferFunc: batch(async ({ x }: Record<string, Tensor>) => ({ y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v + 1)) })),
  inputs: [{ name: 'x', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'y', dtype: 'FP32', shape: [-1] }],
});
const hello: RouteHandler = (req, res) => void res.json({ path: req.path });
triton.http.router.get('/hello/:name', hello, (req, res) => {
  res.status(200).send(req.params.name);
});
export const registry = triton.metrics.registry;
export const ports: Record<string, number> = triton.ports;
// @ts-expect-error the handle bind() returns is read-only
bound.state = 'READY';
// @ts-expect-error the server's internals are not part of its type
void triton.repository;
export const text: string = toPbtxt(bound.configJson);
export const ready: boolean = bound.ready && triton.isReady();
export { ModelClient };
`;

/** The declarations of the entry points, by path relative to the repository (`dist/lib/index.d.ts`, ...). */
const declarations = new Map<string, string>();
/** The names each entry point exports. */
const exportsOf: Record<string, string[]> = {};

jest.setTimeout(240_000);

beforeAll(() => {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.build.json'), {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  });
  if (!parsed) throw new Error('tsconfig.build.json could not be read');
  const options: ts.CompilerOptions = { ...parsed.options, declaration: true, emitDeclarationOnly: true, sourceMap: false, declarationMap: false, noEmit: false };
  const program = ts.createProgram(Object.values(ENTRIES).map((f) => path.join(ROOT, f)), options);
  program.emit(undefined, (file, text) => void declarations.set(path.relative(ROOT, file), text), undefined, true);
  const checker = program.getTypeChecker();
  for (const [entry, file] of Object.entries(ENTRIES)) {
    const source = program.getSourceFile(path.join(ROOT, file));
    const symbol = source && checker.getSymbolAtLocation(source);
    if (!symbol) throw new Error(`${file} is not a module`);
    exportsOf[entry] = checker.getExportsOfModule(symbol).map((s) => s.name);
  }
}, 240_000);

const sorted = (names: Iterable<string>) => [...new Set(names)].sort();

/** The declaration file of an entry point, as package.json's `exports` names it. */
function typesOf(entry: string): string {
  const target = MANIFEST.exports[entry === 'tstriton' ? '.' : `./${entry.slice('tstriton/'.length)}`];
  if (typeof target !== 'object') throw new Error(`package.json exports no types for ${entry}`);
  return path.normalize(target.types);
}

/** Every declaration file an entry point's reaches, and the bare specifiers each imports. */
function reach(entry: string): { files: string[]; bare: Map<string, string[]>; unresolved: string[] } {
  const start = typesOf(entry);
  const files = new Set<string>();
  const bare = new Map<string, string[]>();
  const unresolved: string[] = [];
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    const text = declarations.get(file);
    if (text === undefined) {
      unresolved.push(file);
      continue;
    }
    const info = ts.preProcessFile(text, true, true);
    const specifiers = [...info.importedFiles, ...info.typeReferenceDirectives.map((r) => ({ fileName: r.fileName }))].map((r) => r.fileName);
    for (const spec of specifiers) {
      if (spec.startsWith('.')) {
        const base = path.normalize(path.join(path.dirname(file), spec));
        const found = [`${base}.d.ts`, path.join(base, 'index.d.ts')].find((f) => declarations.has(f));
        if (found) queue.push(found);
        else unresolved.push(`${spec} (from ${file})`);
      } else {
        bare.set(spec, [...(bare.get(spec) ?? []), file]);
      }
    }
  }
  return { files: [...files], bare, unresolved };
}

/** The package name of a bare specifier: `@scope/name/x` → `@scope/name`, `name/x` → `name`. */
function packageOf(spec: string): string {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}

/** True if the installed package ships declarations of its own (not through a `@types/*` package). */
function shipsTypes(pkg: string): boolean {
  const dir = path.join(ROOT, 'node_modules', pkg);
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { types?: string; typings?: string };
  return manifest.types !== undefined || manifest.typings !== undefined || fs.existsSync(path.join(dir, 'index.d.ts'));
}

it('the root exports the documented API, and nothing else', () => {
  expect(sorted(exportsOf.tstriton ?? [])).toEqual(sorted(ROOT_EXPORTS));
});

it('tstriton/config exports no internals', () => {
  for (const internal of ['validateOrThrow', 'envName', 'nameSpecs', 'NamedTensorSpec', 'buildModelConfigJson']) expect(exportsOf['tstriton/config']).not.toContain(internal);
});

it('docs/api.md lists exactly what each entry point exports', () => {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'api.md'), 'utf8');
  const listed: Record<string, string[]> = {};
  let section: string | undefined;
  for (const line of doc.split('\n')) {
    const heading = /^## `([^`]+)`/.exec(line);
    if (heading) section = heading[1];
    else if (line.startsWith('## ')) section = undefined;
    const item = /^- `([A-Za-z_][A-Za-z0-9_]*)`/.exec(line);
    if (section && item) (listed[section] ??= []).push(item[1] as string);
  }
  for (const entry of Object.keys(ENTRIES)) {
    expect({ entry, names: sorted(listed[entry] ?? []) }).toEqual({ entry, names: sorted(exportsOf[entry] ?? []) });
  }
});

it.each(Object.keys(ENTRIES))('the declarations of %s import only Node builtins and dependencies with types of their own', (entry) => {
  const { files, bare, unresolved } = reach(entry);
  expect(files.length).toBeGreaterThan(0);
  expect(unresolved).toEqual([]);
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const offending: string[] = [];
  for (const [spec, from] of bare) {
    if (builtins.has(spec)) continue;
    const pkg = packageOf(spec);
    if (!(pkg in MANIFEST.dependencies)) offending.push(`${spec}: not a dependency (imported by ${from.join(', ')})`);
    else if (!shipsTypes(pkg)) offending.push(`${spec}: its types come from a @types package the user does not get (imported by ${from.join(', ')})`);
  }
  expect(offending).toEqual([]);
});

it('tstriton/client reaches no package at all beyond Node', () => {
  const { bare } = reach('tstriton/client');
  expect([...bare.keys()].filter((s) => !s.startsWith('node:') && !builtinModules.includes(s))).toEqual([]);
});

it('a strict project with skipLibCheck off and no esModuleInterop type-checks against every entry point, with only the dependencies installed', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tstriton-public-api-'));
  try {
    const modules = path.join(dir, 'node_modules');
    const pkg = path.join(modules, 'tstriton');
    for (const [file, text] of declarations) {
      fs.mkdirSync(path.join(pkg, path.dirname(file)), { recursive: true });
      fs.writeFileSync(path.join(pkg, file), text);
    }
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(pkg, 'package.json'));
    // What `npm install tstriton` brings (and more: the whole tree but the @types packages), plus @types/node.
    fs.mkdirSync(path.join(modules, '@types'), { recursive: true });
    for (const name of fs.readdirSync(path.join(ROOT, 'node_modules'))) {
      if (name === '@types' || name === 'tstriton' || name.startsWith('.')) continue;
      fs.symlinkSync(path.join(ROOT, 'node_modules', name), path.join(modules, name));
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules', '@types', 'node'), path.join(modules, '@types', 'node'));
    fs.writeFileSync(path.join(dir, 'consumer.ts'), CONSUMER);
    const options: ts.CompilerOptions = {
      strict: true,
      skipLibCheck: false,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ['node'],
      typeRoots: [path.join(modules, '@types')],
    };
    const program = ts.createProgram([path.join(dir, 'consumer.ts')], options);
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => {
      const where = d.file && d.start !== undefined ? `${path.relative(dir, d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1}: ` : '';
      return `${where}TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
    });
    expect(diagnostics).toEqual([]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
