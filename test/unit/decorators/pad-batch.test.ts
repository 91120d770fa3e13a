import { tensor, type Tensor } from '../../../lib';
import { batch, groupByValues, padBatch, type BatchContext } from '../../../decorators';
import { call, caught, f32, INSTANCE, request, row, values } from './helpers';

/** Requests whose input `x` has 2, 4 and 3 elements per row. */
const ragged = () => [
  request({ x: f32([1, 2], 1, 2) }, { id: 'a' }),
  request({ x: f32([2, 4], 1, 2, 3, 4, 5, 6, 7, 8) }, { id: 'b' }),
  request({ x: f32([1, 3], 1, 2, 3) }, { id: 'c' }),
];

describe('@padBatch', () => {
  it('pads every request to the largest dims and calls once', async () => {
    const seen: Tensor[] = [];
    const fn = batch(
      padBatch((inputs) => {
        seen.push(inputs.x!);
        return { y: inputs.x! };
      }),
    );
    await fn(ragged());
    expect(seen).toHaveLength(1);
    expect(seen[0]!.shape).toEqual([4, 4]);
    expect(values(seen[0])).toEqual([1, 2, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 0]);
  });

  it('cuts outputs that follow the padded input back to each request\'s dims (PyTriton leaves the padding)', async () => {
    const fn = batch(padBatch((inputs) => ({ y: { shape: inputs.x!.shape, data: (inputs.x!.data as Float32Array).map((v) => v * 10) } })));
    const out = await fn(ragged());
    expect(out.map((o) => o.y!.shape)).toEqual([
      [1, 2],
      [2, 4],
      [1, 3],
    ]);
    expect(values(out[0]!.y)).toEqual([10, 20]);
    expect(values(out[2]!.y)).toEqual([10, 20, 30]);
  });

  it('leaves outputs whose dims do not follow a padded input as they are', async () => {
    const fn = batch(
      padBatch((inputs) => {
        const n = inputs.x!.shape[0]!;
        return { length: f32([n, 1], ...new Array<number>(n).fill(4)), pair: f32([n, 2], ...new Array<number>(2 * n).fill(1)) };
      }),
    );
    const out = await fn(ragged());
    expect(out[0]!.length!.shape).toEqual([1, 1]);
    expect(out[0]!.pair!.shape).toEqual([1, 2]);
    expect(out[2]!.pair!.shape).toEqual([1, 2]);
  });

  it('pads with a chosen value, or repeats the edge element', async () => {
    const padded: unknown[][] = [];
    const identity = (inputs: Record<string, Tensor>) => {
      padded.push(values(inputs.x));
      return { y: inputs.x! };
    };
    const two = () => [request({ x: f32([1, 1], 5) }), request({ x: f32([1, 3], 1, 2, 3) })];
    await batch(padBatch({ value: -1 })(identity))(two());
    await batch(padBatch({ mode: 'edge' })(identity))(two());
    expect(padded).toEqual([
      [5, -1, -1, 1, 2, 3],
      [5, 5, 5, 1, 2, 3],
    ]);
  });

  it('pads along every axis of a multi-dimensional input', async () => {
    let seen: Tensor | undefined;
    const fn = batch(
      padBatch((inputs) => {
        seen = inputs.img;
        return { y: inputs.img! };
      }),
    );
    const out = await fn([request({ img: f32([1, 1, 2], 1, 2) }), request({ img: f32([1, 2, 1], 3, 4) })]);
    expect(seen!.shape).toEqual([2, 2, 2]);
    expect(values(seen)).toEqual([1, 2, 0, 0, 3, 0, 4, 0]);
    expect(out.map((o) => [o.y!.shape, values(o.y)])).toEqual([
      [[1, 1, 2], [1, 2]],
      [[1, 2, 1], [3, 4]],
    ]);
  });

  it('pads BYTES inputs with empty elements', async () => {
    let seen: unknown[] = [];
    const fn = batch(
      padBatch((inputs) => {
        seen = values(inputs.words);
        return { y: inputs.words! };
      }),
    );
    const out = await fn([request({ words: tensor('BYTES', [1, 1], ['a']) }), request({ words: tensor('BYTES', [1, 2], ['b', 'c']) })]);
    expect(seen).toEqual(['a', '', 'b', 'c']);
    expect(values(out[0]!.y)).toEqual(['a']);
  });

  it('keeps the padding with unpad: false', async () => {
    const out = await batch(padBatch({ unpad: false })((inputs) => ({ y: inputs.x! })))(ragged());
    expect(out.map((o) => o.y!.shape[1])).toEqual([4, 4, 4]);
  });

  it('cuts an output whose leading dims follow an input when unpad names it', async () => {
    // Per token two features: y is [T, 2] for tokens x [T].
    const features = (inputs: Record<string, Tensor>) => {
      const [n, t] = inputs.x!.shape as [number, number];
      return { y: f32([n, t, 2], ...Array.from({ length: n * t * 2 }, (_, i) => i)) };
    };
    const two = () => [request({ x: f32([1, 1], 9) }), request({ x: f32([1, 3], 1, 2, 3) })];
    const auto = await batch(padBatch(features))(two());
    expect(auto[0]!.y!.shape).toEqual([1, 3, 2]);
    const named = await batch(padBatch({ unpad: { y: 'x' } })(features))(two());
    expect(named[0]!.y!.shape).toEqual([1, 1, 2]);
    expect(values(named[0]!.y)).toEqual([0, 1]);
    expect(named[1]!.y!.shape).toEqual([1, 3, 2]);
  });

  it('rejects an unpad mapping the output does not fit', async () => {
    const fn = batch(padBatch({ unpad: { y: 'x' } })((inputs) => ({ y: f32([inputs.x!.shape[0]!, 1], 0, 0) })));
    const err = await caught(() => fn([request({ x: f32([1, 1], 9) }), request({ x: f32([1, 3], 1, 2, 3) })]));
    expect(err.message).toMatch(/@padBatch: output "y" has dims \[1\], which do not start with the padded dims \[3\] of input "x"/);
  });

  describe('batch sizes (PyTriton\'s pad_batch)', () => {
    it('repeats the last row up to the next size and drops the extra rows from the outputs', async () => {
      let ctx: BatchContext | undefined;
      let rows: unknown[] = [];
      const fn = batch(
        padBatch({ batchSizes: [2, 4, 8] })((inputs, c) => {
          ctx = c;
          rows = values(inputs.x);
          return { y: inputs.x! };
        }),
      );
      const out = await fn([request({ x: row(1) }), request({ x: f32([2, 1], 2, 3) })]);
      expect(rows).toEqual([1, 2, 3, 3]);
      expect(ctx!.rows).toEqual([1, 3]);
      expect(out.map((o) => values(o.y))).toEqual([[1], [2, 3]]);
    });

    it("takes the preferred batch sizes and max batch size from the model config with 'config'", async () => {
      const seen: number[] = [];
      const fn = batch(
        padBatch({ batchSizes: 'config' })((inputs) => {
          seen.push(inputs.x!.shape[0]!);
          return { y: inputs.x! };
        }),
      );
      const rowsOf = (n: number) => [request({ x: f32([n, 1], ...new Array<number>(n).fill(1)) })];
      await call(fn, rowsOf(3), INSTANCE);
      await call(fn, rowsOf(5), INSTANCE);
      await call(fn, rowsOf(7), INSTANCE);
      expect(seen).toEqual([4, 6, 8]);
      expect((await caught(() => fn(rowsOf(1)))).message).toMatch(/batchSizes: 'config' needs the model config/);
    });
  });

  it('fails on inputs whose rank differs', async () => {
    const fn = batch(padBatch((inputs) => ({ y: inputs.x! })));
    const err = await caught(() => fn([request({ x: f32([1, 2], 1, 2) }, { id: 'a' }), request({ x: f32([1, 1, 2], 1, 2) }, { id: 'b' })]));
    expect(err.message).toBe('@padBatch: input "x" has dims [2] in request 0 (id "a") but [1,2] in request 1 (id "b"); padding cannot change the rank');
  });

  it('rejects bad options when the decorator is made', async () => {
    expect((await caught(() => padBatch({ mode: 'mirror' as never }))).message).toMatch(/mode must be "constant" or "edge"/);
    expect((await caught(() => padBatch({ batchSizes: [0] }))).message).toMatch(/batchSizes must be positive integers/);
  });

  it('composes with @groupByValues above it: each group is padded on its own and cut back per request', async () => {
    const widths: number[] = [];
    const fn = batch(
      groupByValues('t')(
        padBatch((inputs) => {
          widths.push(inputs.x!.shape[1]!);
          return { y: inputs.x! };
        }),
      ),
    );
    const t = (v: number) => tensor('INT32', [1, 1], new Int32Array([v]));
    const out = await fn([
      request({ x: f32([1, 1], 1), t: t(0) }),
      request({ x: f32([1, 5], 1, 2, 3, 4, 5), t: t(1) }),
      request({ x: f32([1, 2], 1, 2), t: t(0) }),
    ]);
    expect(widths).toEqual([2, 5]);
    expect(out.map((o) => o.y!.shape)).toEqual([
      [1, 1],
      [1, 5],
      [1, 2],
    ]);
  });
});
