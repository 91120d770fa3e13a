import { tensor, type Tensor } from '../../../lib';
import { batch, firstValue, groupByValues, type BatchContext } from '../../../decorators';
import { caught, f32, request, row, values } from './helpers';

const temp = (...v: number[]) => f32([v.length, 1], ...v);

describe('@firstValue', () => {
  it('replaces the named input by its one value, squeezed, and leaves the others batched', async () => {
    let seen: Record<string, Tensor> = {};
    const fn = batch(
      firstValue('temperature')((inputs) => {
        seen = { ...inputs };
        return { y: inputs.x! };
      }),
    );
    await fn([request({ x: row(1), temperature: temp(0.5) }), request({ x: f32([2, 1], 2, 3), temperature: temp(0.5, 0.5) })]);
    expect(seen.temperature!.shape).toEqual([]);
    expect(values(seen.temperature)).toEqual([0.5]);
    expect(seen.x!.shape).toEqual([3, 1]);
  });

  it('keeps the dims with squeeze: false, and of values with several elements', async () => {
    const shapes: number[][] = [];
    const fn = batch(
      firstValue('temperature', 'window', { squeeze: false })((inputs) => {
        shapes.push([...inputs.temperature!.shape], [...inputs.window!.shape]);
        return { y: inputs.x! };
      }),
    );
    await fn([request({ x: row(1), temperature: temp(0.5), window: f32([1, 2], 3, 4) })]);
    expect(shapes).toEqual([[1], [2]]);
  });

  it('fails, naming both requests and the fix, when requests of one batch disagree', async () => {
    const fn = batch(firstValue('temperature')((inputs) => ({ y: inputs.x! })));
    const err = await caught(() => fn([request({ x: row(1), temperature: temp(0.5) }, { id: 'a' }), request({ x: row(2), temperature: temp(0.7) }, { id: 'b' })]));
    expect(err.code).toBe('INFERENCE_FAILED');
    expect(err.message).toBe(
      `@firstValue: input "temperature" must hold one value in the whole batch, but request 0 (id "a") has [0.5] and request 1 (id "b") has [${Math.fround(0.7)}] (row 0); ` +
        "put @groupByValues('temperature') above @firstValue to split the batch by it",
    );
  });

  it('blames the client when one request disagrees with itself', async () => {
    const fn = batch(firstValue('temperature')((inputs) => ({ y: inputs.x! })));
    const err = await caught(() => fn([request({ x: f32([2, 1], 1, 2), temperature: temp(0.5, 0.25) }, { id: 'a' })]));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toBe('@firstValue: input "temperature" must hold one value in every row, but request 0 (id "a") has [0.5] in row 0 and [0.25] in row 1');
  });

  it('takes the first value without checking when strict is false', async () => {
    let t: unknown[] = [];
    const fn = batch(
      firstValue('temperature', { strict: false })((inputs) => {
        t = values(inputs.temperature);
        return { y: inputs.x! };
      }),
    );
    await fn([request({ x: row(1), temperature: temp(0.25) }), request({ x: row(2), temperature: temp(0.5) })]);
    expect(t).toEqual([0.25]);
  });

  it('compares BYTES values by content', async () => {
    let mode: unknown[] = [];
    const fn = batch(
      firstValue('mode')((inputs) => {
        mode = values(inputs.mode);
        return { y: inputs.x! };
      }),
    );
    const m = (s: string) => tensor('BYTES', [1, 1], [s]);
    await fn([request({ x: row(1), mode: m('greedy') }), request({ x: row(2), mode: m('greedy') })]);
    expect(mode).toEqual(['greedy']);
    await expect(fn([request({ x: row(1), mode: m('greedy') }), request({ x: row(2), mode: m('beam') })])).rejects.toThrow(/has \["greedy"\] and request 1 has \["beam"\]/);
  });

  describe('parameters', () => {
    it('puts a parameter every request agrees on in batchParameters', async () => {
      let ctx: BatchContext | undefined;
      const fn = batch(
        firstValue({ parameters: ['temperature', 'absent'] })((inputs, c) => {
          ctx = c;
          return { y: inputs.x! };
        }),
      );
      await fn([request({ x: row(1) }, { parameters: { temperature: 1 } }), request({ x: row(2) }, { parameters: { temperature: 1n } })]);
      expect(ctx!.batchParameters).toEqual({ temperature: 1 });
      expect('absent' in ctx!.batchParameters).toBe(false);
    });

    it('fails when one request sends another value or none', async () => {
      const fn = batch(firstValue({ parameters: ['temperature'] })((inputs) => ({ y: inputs.x! })));
      const err = await caught(() => fn([request({ x: row(1) }, { id: 'a', parameters: { temperature: 0.5 } }), request({ x: row(2) }, { id: 'b' })]));
      expect(err.message).toBe(
        '@firstValue: parameter "temperature" must be the same in every request of the batch, but request 0 (id "a") sends 0.5 and request 1 (id "b") sends none; ' +
          "put @groupByValues({ parameters: ['temperature'] }) above @firstValue to split the batch by it",
      );
    });
  });

  it('serves mixed batches under @groupByValues with the same name (the PyTriton stack)', async () => {
    const seen: unknown[] = [];
    const fn = batch(
      groupByValues('temperature')(
        firstValue('temperature')((inputs) => {
          const t = (inputs.temperature!.data as Float32Array)[0] as number;
          seen.push(t);
          return { y: { shape: inputs.x!.shape, data: (inputs.x!.data as Float32Array).map((v) => v * t) } };
        }),
      ),
    );
    const out = await fn([
      request({ x: row(10), temperature: temp(0.5) }),
      request({ x: row(10), temperature: temp(2) }),
      request({ x: row(4), temperature: temp(0.5) }),
    ]);
    expect(seen).toEqual([0.5, 2]);
    expect(out.map((o) => values(o.y)[0])).toEqual([5, 20, 2]);
  });

  it('fails on an input that is not in the batch', async () => {
    const fn = batch(firstValue('temperature')((inputs) => ({ y: inputs.x! })));
    expect((await caught(() => fn([request({ x: row(1) })]))).message).toBe('@firstValue: input "temperature" is not in the batch (batched inputs: x)');
  });

  it('fails when called without @batch above it', async () => {
    const inner = firstValue('t')((inputs) => inputs);
    const err = await caught(() => (inner as unknown as (r: unknown) => Promise<unknown>)([request({ x: row(1) })]));
    expect(err.message).toBe('@firstValue works on batches and must be placed below @batch; it was called with a list of requests (is @batch missing above it?)');
  });
});
