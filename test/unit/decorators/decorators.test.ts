import * as ts from 'typescript';
import * as lib from '../../../lib';
import { tensor, type Request, type Tensor } from '../../../lib';
import * as decorators from '../../../decorators';
import { batch, sample } from '../../../decorators';
import { resolveCallable } from '../../../lib/callable/infer-func';

function request(inputs: Record<string, Tensor>, parameters: Record<string, string> = {}): Request {
  return { inputs, parameters, requestedOutputs: [], id: '', signal: new AbortController().signal };
}

const row = (...v: number[]) => tensor('FP32', [1, v.length], new Float32Array(v));

describe('@batch', () => {
  it('concatenates requests, calls once, and splits outputs back by batch size', async () => {
    const calls: number[][] = [];
    const fn = batch(async (inputs) => {
      const x = inputs.x!;
      calls.push([...x.shape]);
      return { y: tensor('FP32', x.shape, (x.data as Float32Array).map((v) => v * 2)) };
    });
    const two = tensor('FP32', [2, 2], new Float32Array([3, 4, 5, 6]));
    const out = await fn([request({ x: row(1, 2) }), request({ x: two })]);
    expect(calls).toEqual([[3, 2]]);
    expect(out).toHaveLength(2);
    expect(out[0]!.y!.shape).toEqual([1, 2]);
    expect([...(out[0]!.y!.data as Float32Array)]).toEqual([2, 4]);
    expect(out[1]!.y!.shape).toEqual([2, 2]);
    expect([...(out[1]!.y!.data as Float32Array)]).toEqual([6, 8, 10, 12]);
  });

  it('passes the batch requests (and their parameters) in the context', async () => {
    let seen: unknown[] = [];
    const fn = batch((inputs, ctx) => {
      seen = ctx.requests.map((r) => r.parameters.tag);
      return { y: inputs.x! };
    });
    await fn([request({ x: row(1) }, { tag: 'a' }), request({ x: row(2) }, { tag: 'b' })]);
    expect(seen).toEqual(['a', 'b']);
  });

  it('rejects requests with different input sets clearly', async () => {
    const fn = batch((inputs) => ({ y: inputs.x! }));
    await expect(fn([request({ x: row(1) }), request({ z: row(1) })])).rejects.toThrow(
      /same inputs; request 0 has \[x\], request 1 has \[z\]/,
    );
  });

  it('rejects outputs whose row count differs from the batch', async () => {
    const fn = batch(() => ({ y: row(1) }));
    await expect(fn([request({ x: row(1) }), request({ x: row(2) })])).rejects.toThrow(/output 'y' has 1 rows but the batch has 2/);
  });
});

describe('@sample', () => {
  it('calls the function for every request, in order', async () => {
    const fn = sample(async (inputs, req) => ({ y: inputs.x!, id: tensor('BYTES', [1], [req.id]) }));
    const reqs = [1, 2, 3].map((v) => ({ ...request({ x: row(v) }), id: `r${v}` }));
    const out = await fn(reqs);
    expect(out.map((o) => (o.y!.data as Float32Array)[0])).toEqual([1, 2, 3]);
  });
});

describe('decorator forms', () => {
  // Compiles a class using @batch under the given decorator mode and returns the resolved raw callable.
  function compileAndResolve(experimentalDecorators: boolean) {
    const source = `
      import { batch } from 'tstriton/decorators';
      export class Doubler {
        factor = 2;
        @batch
        infer(inputs: any) {
          const x = inputs.x;
          return { y: { shape: x.shape, data: x.data.map((v: number) => v * this.factor) } };
        }
      }`;
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, experimentalDecorators },
    });
    const mod = { exports: {} as Record<string, new () => object> };
    const requireShim = (name: string) => {
      if (name === 'tstriton/decorators') return decorators;
      if (name === 'tstriton') return lib;
      throw new Error(`unexpected import ${name}`);
    };
    new Function('require', 'module', 'exports', outputText)(requireShim, mod, mod.exports);
    return resolveCallable(new mod.exports.Doubler!(), 'm');
  }

  it.each([
    ['legacy (experimentalDecorators)', true],
    ['TC39', false],
  ])('@batch works as a %s method decorator, with `this` bound', async (_mode, experimental) => {
    const fn = compileAndResolve(experimental);
    const out = await fn([request({ x: row(1, 2) }), request({ x: row(3, 4) })]);
    expect([...(out[1]!.y!.data as Float32Array)]).toEqual([6, 8]);
  });

  it('finds exactly one decorated method on an object', () => {
    class Two {
      @batch a() {
        return {};
      }
      @sample b() {
        return {};
      }
    }
    expect(() => resolveCallable(new Two(), 'm')).toThrow(/several decorated methods \(a, b\)/);
    expect(() => resolveCallable({ nothing: 1 }, 'm')).toThrow(/no method decorated with @batch or @sample/);
  });
});
