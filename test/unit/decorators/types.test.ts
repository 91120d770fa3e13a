import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { MODES } from './helpers';

/**
 * The decorators' types, as a user's project checks them: `strict`, under standard (TC39) decorators and again
 * under `experimentalDecorators`. The README's Quick start is read from README.md as it stands; the other source
 * uses every decorator in each of its forms (a decorated method, a factory's decorator, a plain wrapper) and hands
 * the results to `bind()`. Only these sources' own diagnostics count: the package's sources are reached through
 * the same paths as the project's tsconfig maps `tstriton` and `tstriton/decorators` to.
 */
const ROOT = path.join(__dirname, '../../..');

/** The first ```ts block under `## Quick start` in README.md. */
function quickStart(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const block = /```ts[^\n]*\n([\s\S]*?)```/.exec(section);
  if (!block?.[1]) throw new Error('README.md has no ```ts block under "## Quick start"');
  return block[1];
}

const EVERY_FORM = `
import { Triton, tensor, type Request, type Response, type Tensor } from 'tstriton';
import {
  batch, sample, groupByKeys, fillOptionals, tritonContext, groupByValues, padBatch, firstValue,
  type BatchContext, type TritonContext,
} from 'tstriton/decorators';

class Generator {
  scale = 2;

  @fillOptionals({ temperature: 1.0 })
  @groupByKeys
  @batch
  @groupByValues('temperature')
  @padBatch
  @firstValue('temperature')
  @tritonContext
  infer(inputs: Record<string, Tensor>, ctx: BatchContext) {
    return { tokens: tensor('FP32', [ctx.rows.length, 1], new Float32Array(ctx.rows.length).fill(this.scale)) };
  }
}

class PerSample {
  @sample
  async infer(inputs: Record<string, Tensor>, _ctx: TritonContext) {
    return { y: inputs.x! };
  }
}

class Padded {
  @batch
  @padBatch({ value: 0, batchSizes: 'config' })
  @groupByValues('mode', { parameters: ['priority'] })
  infer({ x }: Record<string, Tensor>) {
    return { y: x! };
  }
}

class Raw {
  @tritonContext
  infer(requests: Request[], context: TritonContext): Response[] {
    return requests.map(() => ({ count: tensor('INT64', [1], BigInt64Array.of(BigInt(context.requests.length))) }));
  }
}

const wrapped = batch(groupByValues('temperature')(async (inputs: Record<string, Tensor>, ctx: BatchContext) => ({ y: inputs.x!, n: tensor('INT32', [1], Int32Array.of(ctx.rows.length)) })));
const perRequest = sample(async (inputs: Record<string, Tensor>) => ({ y: inputs.x! }));
const padded = batch(padBatch()(async (inputs: Record<string, Tensor>) => ({ y: inputs.x! })));
const contextual = batch(groupByValues('temperature')(async (inputs, ctx) => ({ y: inputs.x!, n: tensor('INT32', [1], Int32Array.of(ctx.rows.length)) })));

const triton = new Triton();
const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };
triton.bind({ modelName: 'generator', inferFunc: new Generator(), ...io, config: { maxBatchSize: 8 } });
triton.bind({ modelName: 'per_sample', inferFunc: new PerSample(), ...io, config: { maxBatchSize: 8 } });
triton.bind({ modelName: 'padded', inferFunc: new Padded(), ...io, config: { maxBatchSize: 8 } });
triton.bind({ modelName: 'raw', inferFunc: new Raw(), ...io });
triton.bind({ modelName: 'wrapped', inferFunc: wrapped, ...io, config: { maxBatchSize: 8 } });
triton.bind({ modelName: 'per_request', inferFunc: perRequest, ...io, config: { maxBatchSize: 8 } });
triton.bind({ modelName: 'padded_fn', inferFunc: padded, ...io, config: { maxBatchSize: 8 } });
triton.bind({ modelName: 'contextual', inferFunc: contextual, ...io, config: { maxBatchSize: 8 } });
`;

/** The diagnostics of `sources` (file name to text, placed in test/unit/decorators), formatted, under one decorator mode. */
function check(sources: Record<string, string>, experimentalDecorators: boolean): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    lib: ['lib.es2023.d.ts', 'lib.esnext.disposable.d.ts', 'lib.decorators.d.ts'],
    esModuleInterop: true,
    experimentalDecorators,
    skipLibCheck: false,
    types: ['node'],
    baseUrl: ROOT,
    paths: { tstriton: ['lib/index.ts'], 'tstriton/decorators': ['decorators/index.ts'] },
  };
  const files = new Map(Object.entries(sources).map(([name, text]) => [path.join(__dirname, name), text]));
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const text = files.get(path.resolve(fileName));
    return text !== undefined ? ts.createSourceFile(fileName, text, languageVersion, true) : getSourceFile(fileName, languageVersion, onError, shouldCreate);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => files.has(path.resolve(fileName)) || fileExists(fileName);
  const program = ts.createProgram([...files.keys()], options, host);
  return [...files.keys()].flatMap((file) => {
    const sourceFile = program.getSourceFile(file);
    if (!sourceFile) throw new Error(`${file} is not in the program`);
    return [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)].map(
      (d) => `${path.basename(file)}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`,
    );
  });
}

describe('decorator types under strict type-checking', () => {
  jest.setTimeout(120_000);

  it.each(MODES)('the README Quick start and every decorator form type-check with %s decorators', (_mode, experimentalDecorators) => {
    expect(check({ 'quickstart.virtual.ts': quickStart(), 'every-form.virtual.ts': EVERY_FORM }, experimentalDecorators)).toEqual([]);
  });
});
