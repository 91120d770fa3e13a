import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { exitingWithParent, track } from '../helpers/resources';
import { spawnServing, type ServingChild } from '../helpers/serving-child';

// `.ts` files a user gives tstriton — a `--module` file, the module of its worker instances, a repository's model.ts —
// load without a build step, compiled by esbuild as they load (lib/instances/worker/register-ts.js), with the
// decorators their own tsconfig.json asks for: standard (TC39) decorators by default, legacy ones where it sets
// experimentalDecorators (here through `extends`). Each project's decorators of its own can only run in the mode it
// is written for. The command line runs from the sources, in a process of its own.
jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');
const CLI = ['--require', join(ROOT, 'lib/instances/worker/register-ts.js'), join(ROOT, 'lib/cli/main.ts')];
const LIB = JSON.stringify(join(ROOT, 'lib'));
const DECORATORS = JSON.stringify(join(ROOT, 'decorators'));

/** A decorator written for standard decorators only: it reads the context they get (legacy ones get a name there). */
const SCALED = `
function scaled(factor: number) {
  return function (method: (inputs: Record<string, Tensor>) => Promise<Record<string, Tensor>>, context: ClassMethodDecoratorContext) {
    if (context.kind !== 'method') throw new Error('@scaled decorates methods, got ' + String(context));
    return async function (this: unknown, inputs: Record<string, Tensor>) {
      const y = (await method.call(this, inputs)).y!;
      return { y: tensor('FP32', y.shape, (y.data as Float32Array).map((v) => v * factor)) };
    };
  };
}
`;

const FILES: Record<string, string> = {
  // JSON with comments and a trailing comma, as tsconfig files are; no experimentalDecorators.
  'standard/tsconfig.json': `{
  // standard decorators
  "compilerOptions": { "target": "ES2022", "strict": true, /* no experimentalDecorators */ },
}
`,
  'standard/models.ts': `
import { tensor, workers, type Tensor } from ${LIB};
import type { Triton } from ${JSON.stringify(join(ROOT, 'lib/triton/triton'))};
import { batch } from ${DECORATORS};
${SCALED}
class AddOne {
  offset = 1;

  @batch
  @scaled(10)
  async infer({ x }: Record<string, Tensor>) {
    return { y: tensor('FP32', x!.shape, (x!.data as Float32Array).map((v) => v + this.offset)) };
  }
}

const io = { inputs: [{ name: 'x', dtype: 'FP32' as const, shape: [-1] }], outputs: [{ name: 'y', dtype: 'FP32' as const, shape: [-1] }] };

export default function bind(triton: Triton): void {
  triton.bind({ modelName: 'add_one_times_ten', inferFunc: new AddOne(), ...io, config: { maxBatchSize: 8 } });
  triton.bind({ modelName: 'worker_times_three', inferFunc: workers({ module: require.resolve('./worker-model.ts') }), ...io, config: { maxBatchSize: 8 } });
}
`,
  'standard/worker-model.ts': `
import { tensor, type Tensor } from ${LIB};
import { batch } from ${DECORATORS};
${SCALED}
export default class TimesThree {
  @batch
  @scaled(3)
  async infer({ x }: Record<string, Tensor>) {
    return { y: x! };
  }
}
`,
  'standard/broken.ts': `export default function bind(): void {
  const answer: number = ;
}
`,
  // experimentalDecorators from the config this one extends.
  'legacy/tsconfig.base.json': '{ "compilerOptions": { "experimentalDecorators": true } }\n',
  'legacy/tsconfig.json': '{ "extends": "./tsconfig.base", "compilerOptions": { "strict": true } }\n',
  'legacy/models/doubled/config.pbtxt': [
    'backend: "tstriton"',
    'max_batch_size: 8',
    'input [ { name: "x" data_type: TYPE_FP32 dims: [ -1 ] } ]',
    'output [ { name: "y" data_type: TYPE_FP32 dims: [ -1 ] } ]',
  ].join('\n'),
  'legacy/models/doubled/1/model.ts': `
import { tensor, type Tensor } from ${LIB};
import { batch } from ${DECORATORS};

/** A decorator written for experimentalDecorators only: it rewrites the method's property descriptor. */
function doubled(_target: object, _key: string, descriptor: PropertyDescriptor): PropertyDescriptor {
  const method = descriptor.value as (inputs: Record<string, Tensor>) => Promise<Record<string, Tensor>>;
  return {
    ...descriptor,
    value: async function (this: unknown, inputs: Record<string, Tensor>) {
      const y = (await method.call(this, inputs)).y!;
      return { y: tensor('FP32', y.shape, (y.data as Float32Array).map((v) => v * 2)) };
    },
  };
}

export default class Doubled {
  @batch
  @doubled
  async execute({ x }: Record<string, Tensor>) {
    return { y: x! };
  }
}
`,
};

/** The environment without the caller's TSTRITON_* variables. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TSTRITON_')));
}

function serveArgs(args: string[]): string[] {
  return [...CLI, 'serve', ...args, '--http-address', '127.0.0.1', '--http-port', '0', '--grpc-port', '0', '--metrics-port', '0'];
}

async function infer(port: number, model: string, data: number[]): Promise<number[]> {
  const body = { inputs: [{ name: 'x', datatype: 'FP32', shape: [1, data.length], data }] };
  const res = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: JSON.stringify(body) });
  const answer = (await res.json()) as { error?: string; outputs?: { data: number[] }[] };
  if (res.status !== 200) throw new Error(`${model}: HTTP ${res.status} ${answer.error}`);
  return answer.outputs?.[0]?.data ?? [];
}

describe('TypeScript models load without a build step, in the decorator mode of their own tsconfig.json', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tstriton-ts-'));
    for (const [name, text] of Object.entries(FILES)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves a --module file and its worker instances with standard decorators, and a model.ts with experimentalDecorators', async () => {
    const server: ServingChild = await spawnServing(
      serveArgs(['--module', join(dir, 'standard/models.ts'), '--model-repository', join(dir, 'legacy/models')]),
      { cwd: dir, env: cleanEnv() },
    );
    const port = server.ports.http as number;
    expect(await infer(port, 'add_one_times_ten', [1, 2, -3])).toEqual([20, 30, -20]);
    expect(await infer(port, 'worker_times_three', [1, 2, -3])).toEqual([3, 6, -9]);
    expect(await infer(port, 'doubled', [1, 2, -3])).toEqual([2, 4, -6]);
  });

  it('refuses a .ts file that does not parse, naming the file, line and column', async () => {
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, serveArgs(['--module', join(dir, 'standard/broken.ts')]), { cwd: dir, env: exitingWithParent(cleanEnv()) }, (err, _out, stderr) =>
        resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stderr }),
      );
      track(child);
    });
    expect(code).not.toBe(0);
    expect(stderr).toContain(`cannot compile ${join(dir, 'standard/broken.ts')}`);
    expect(stderr).toContain(`${join(dir, 'standard/broken.ts')}:2:26: Unexpected ";"`);
  });
});
