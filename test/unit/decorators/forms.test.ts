import { tensor, type Request, type Response } from '../../../lib';
import { call, caught, compileModel, f32, INSTANCE, MODES, request, row, values } from './helpers';

const t = (v: number) => f32([1, 1], v);
const flag = (v: number) => tensor('INT32', [1, 1], new Int32Array([v]));

/** One decorated class per case (`this.k` checks the method stays bound), the requests, and what to expect. */
const CASES: readonly [string, string, () => Request[], (out: Response[]) => void][] = [
  [
    '@groupByKeys',
    `import { batch, groupByKeys } from 'tstriton/decorators';
     export class M {
       calls = 0;
       @groupByKeys
       @batch
       infer(inputs: any) {
         this.calls++;
         const n = inputs.x.shape[0];
         return { call: { shape: [n, 1], data: new Float32Array(n).fill(this.calls) } };
       }
     }`,
    () => [request({ x: row(1) }), request({ x: row(2), b: flag(1) }), request({ x: row(3) })],
    (out) => expect(out.map((o) => values(o.call)[0])).toEqual([1, 2, 1]),
  ],
  [
    '@fillOptionals',
    `import { tensor } from 'tstriton';
     import { batch, fillOptionals } from 'tstriton/decorators';
     export class M {
       k = 10;
       @fillOptionals({ b: tensor('FP32', [1], new Float32Array([5])) })
       @batch
       infer(inputs: any) {
         return { y: { shape: inputs.b.shape, data: inputs.b.data.map((v: number) => v * this.k) } };
       }
     }`,
    () => [request({ x: row(1) }), request({ x: row(2), b: t(7) })],
    (out) => expect(out.map((o) => values(o.y)[0])).toEqual([50, 70]),
  ],
  [
    '@tritonContext',
    `import { tritonContext } from 'tstriton/decorators';
     export class M {
       k = 10;
       @tritonContext
       infer(requests: any[], ctx: any) {
         return requests.map(() => ({ y: { shape: [1, 1], data: new Float32Array([ctx.requests.length * this.k]) } }));
       }
     }`,
    () => [request({ x: row(1) }), request({ x: row(2) })],
    (out) => expect(out.map((o) => values(o.y)[0])).toEqual([20, 20]),
  ],
  [
    '@groupByValues',
    `import { batch, groupByValues } from 'tstriton/decorators';
     export class M {
       calls = 0;
       @batch
       @groupByValues('t')
       infer(inputs: any) {
         this.calls++;
         const n = inputs.x.shape[0];
         return { call: { shape: [n, 1], data: new Float32Array(n).fill(this.calls) } };
       }
     }`,
    () => [request({ x: row(1), t: t(1) }), request({ x: row(2), t: t(2) }), request({ x: row(3), t: t(1) })],
    (out) => expect(out.map((o) => values(o.call)[0])).toEqual([1, 2, 1]),
  ],
  [
    '@padBatch (bare)',
    `import { batch, padBatch } from 'tstriton/decorators';
     export class M {
       k = 10;
       @batch
       @padBatch
       infer(inputs: any) {
         const [n, w] = inputs.x.shape;
         return { y: inputs.x, width: { shape: [n, 1], data: new Float32Array(n).fill(w * this.k) } };
       }
     }`,
    () => [request({ x: row(1) }), request({ x: row(1, 2, 3) })],
    (out) => {
      expect(out.map((o) => o.y!.shape)).toEqual([
        [1, 1],
        [1, 3],
      ]);
      expect(values(out[0]!.width)).toEqual([30]);
    },
  ],
  [
    '@padBatch({ ...options })',
    `import { batch, padBatch } from 'tstriton/decorators';
     export class M {
       @batch
       @padBatch({ value: 7, unpad: false })
       infer(inputs: any) {
         return { y: inputs.x };
       }
     }`,
    () => [request({ x: row(1) }), request({ x: row(1, 2, 3) })],
    (out) => expect(values(out[0]!.y)).toEqual([1, 7, 7]),
  ],
  [
    '@firstValue',
    `import { batch, firstValue } from 'tstriton/decorators';
     export class M {
       k = 10;
       @batch
       @firstValue('t')
       infer(inputs: any) {
         const t = inputs.t.data[0];
         return { y: { shape: inputs.x.shape, data: inputs.x.data.map((v: number) => v * t * this.k) } };
       }
     }`,
    () => [request({ x: row(1), t: t(2) }), request({ x: row(3), t: t(2) })],
    (out) => expect(out.map((o) => values(o.y)[0])).toEqual([20, 60]),
  ],
];

describe.each(MODES)('%s method decorators', (_mode, experimental) => {
  it.each(CASES)('%s', async (_name, source, requests, check) => {
    check(await compileModel(source, experimental)(requests()));
  });

  it("run PyTriton's recommended stack, outermost first: fillOptionals, groupByKeys, batch, groupByValues, padBatch, firstValue, tritonContext", async () => {
    const fn = compileModel(
      `import { tensor } from 'tstriton';
       import { batch, fillOptionals, firstValue, groupByKeys, groupByValues, padBatch, tritonContext } from 'tstriton/decorators';
       export class M {
         seen: string[] = [];
         @fillOptionals({ temperature: tensor('FP32', [1], new Float32Array([1])) })
         @groupByKeys
         @batch
         @groupByValues('temperature')
         @padBatch
         @firstValue('temperature')
         @tritonContext
         infer(inputs: any, ctx: any) {
           const t = inputs.temperature.data[0];
           this.seen.push(ctx.instance.modelName + ':' + t + ':' + inputs.x.shape.join('x'));
           return { y: { shape: inputs.x.shape, data: inputs.x.data.map((v: number) => v * t) }, seen: { shape: [inputs.x.shape[0], 1], data: new Float32Array(inputs.x.shape[0]).fill(this.seen.length) } };
         }
       }`,
      experimental,
    );
    const out = await call(
      fn,
      [request({ x: row(1, 2) }), request({ x: row(1, 2, 3), temperature: t(2) }), request({ x: row(5) }), request({ x: row(4), temperature: t(2) })],
      INSTANCE,
    );
    expect(out.map((o) => values(o.y))).toEqual([[1, 2], [2, 4, 6], [5], [8]]);
    expect(out.map((o) => values(o.seen)[0])).toEqual([1, 2, 1, 2]);
  });

  it.each([
    ["@groupByValues('t') above @batch", `@groupByValues('t')\n@batch`, /@groupByValues cannot wrap @batch, which already takes the list of requests; put @batch above @groupByValues/],
    ['@groupByKeys below @batch', `@batch\n@groupByKeys`, /@batch cannot wrap @groupByKeys, which already takes the list of requests; put @groupByKeys above @batch/],
    ['@padBatch below @sample', `@sample\n@padBatch`, /@sample cannot wrap @padBatch, which works on batches: use @batch above it/],
  ])('reject %s when the class is defined', async (_name, stack, message) => {
    const source = `import { batch, sample, groupByKeys, groupByValues, padBatch } from 'tstriton/decorators';
      export class M {
        ${stack}
        infer(inputs: any) { return inputs; }
      }`;
    const err = await caught(() => compileModel(source, experimental));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.message).toMatch(message);
  });
});
