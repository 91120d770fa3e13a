import { tensor, type Tensor } from '../../../lib';
import { batch, constantPadder, groupByValues, type BatchContext, type BatchOutputs } from '../../../decorators';
import { caught, f32, request, row, values } from './helpers';

const bytes = (rows: string[][]) => tensor('BYTES', [rows.length, rows[0]!.length], rows.flat());
const ints = (...v: number[]) => tensor('INT32', [v.length, 1], new Int32Array(v));

describe('@groupByValues', () => {
  it('splits rows by the values of the named inputs and merges the outputs back in row order (PyTriton docstring example)', async () => {
    const calls: unknown[][] = [];
    const fn = batch(
      groupByValues('param1', 'param2')((inputs) => {
        calls.push(values(inputs.sentences));
        return { echo: inputs.sentences!, p1: inputs.param1! };
      }),
    );
    const out = await fn([
      request({ sentences: bytes([['Sentence1'], ['Sentence2'], ['Sentence3']]), param1: ints(1, 1, 2), param2: ints(1, 1, 1) }),
    ]);
    expect(calls).toEqual([['Sentence1', 'Sentence2'], ['Sentence3']]);
    expect(values(out[0]!.echo)).toEqual(['Sentence1', 'Sentence2', 'Sentence3']);
    expect(values(out[0]!.p1)).toEqual([1, 1, 2]);
  });

  it('groups rows across requests, keeping each request\'s rows, ids and parameters in the group context', async () => {
    const contexts: BatchContext[] = [];
    const fn = batch(
      groupByValues('t')((inputs, ctx) => {
        contexts.push(ctx);
        const x = inputs.x!.data as Float32Array;
        const t = (inputs.t!.data as Int32Array)[0] as number;
        return { y: { shape: inputs.x!.shape, data: x.map((v) => v + 100 * t) } };
      }),
    );
    const out = await fn([
      request({ x: f32([2, 1], 1, 2), t: ints(1, 2) }, { id: 'a', parameters: { p: 'A' } }),
      request({ x: f32([1, 1], 3), t: ints(1) }, { id: 'b', parameters: { p: 'B' } }),
    ]);
    expect(contexts.map((c) => c.requests.map((r) => r.id))).toEqual([['a', 'b'], ['a']]);
    expect(contexts.map((c) => c.rows)).toEqual([[1, 1], [1]]);
    expect(contexts[0]!.parameters).toEqual([{ p: 'A' }, { p: 'B' }]);
    expect(values(contexts[1]!.requests[0]!.inputs.x)).toEqual([2]);
    expect(values(out[0]!.y)).toEqual([101, 202]);
    expect(values(out[1]!.y)).toEqual([103]);
  });

  it('groups by request parameters', async () => {
    const seen: unknown[][] = [];
    const fn = batch(
      groupByValues({ parameters: ['temperature'] })((inputs, ctx) => {
        seen.push(ctx.parameters.map((p) => p.temperature));
        return { y: inputs.x! };
      }),
    );
    const out = await fn([
      request({ x: row(1) }, { parameters: { temperature: 0.5 } }),
      request({ x: row(2) }, { parameters: { temperature: 0.9 } }),
      request({ x: row(3) }, { parameters: { temperature: 0.5 } }),
      request({ x: row(4) }),
    ]);
    expect(seen).toEqual([[0.5, 0.5], [0.9], [undefined]]);
    expect(out.map((o) => values(o.y)[0])).toEqual([1, 2, 3, 4]);
  });

  it('treats an integer parameter as one value whether it came as a number or a BigInt', async () => {
    let calls = 0;
    const fn = batch(
      groupByValues({ parameters: ['steps'] })((inputs) => {
        calls++;
        return { y: inputs.x! };
      }),
    );
    await fn([request({ x: row(1) }, { parameters: { steps: 4 } }), request({ x: row(2) }, { parameters: { steps: 4n } })]);
    expect(calls).toBe(1);
  });

  it('groups a key input whose shape differs between requests, which @batch alone cannot concatenate', async () => {
    const shapes: number[][] = [];
    const fn = batch(
      groupByValues('stop')((inputs) => {
        shapes.push([...inputs.stop!.shape]);
        return { y: inputs.x! };
      }),
    );
    const out = await fn([
      request({ x: row(1), stop: bytes([['a', 'b']]) }),
      request({ x: row(2), stop: bytes([['a', 'b', 'c']]) }),
      request({ x: row(3), stop: bytes([['a', 'b']]) }),
    ]);
    expect(shapes).toEqual([
      [2, 2],
      [1, 3],
    ]);
    expect(out.map((o) => values(o.y)[0])).toEqual([1, 2, 3]);
  });

  it('compares BYTES rows by content, not by identity', async () => {
    let calls = 0;
    const fn = batch(
      groupByValues('mode')((inputs) => {
        calls++;
        return { y: inputs.x! };
      }),
    );
    await fn([request({ x: row(1), mode: bytes([['greedy']]) }), request({ x: row(2), mode: bytes([['greedy']]) })]);
    expect(calls).toBe(1);
  });

  describe('outputs of different shapes', () => {
    // Each group answers with `t` elements per row, so the groups' outputs differ in shape.
    const ragged = (inputs: Record<string, Tensor>) => {
      const n = inputs.x!.shape[0]!;
      const t = (inputs.t!.data as Int32Array)[0] as number;
      return { y: f32([n, t], ...new Array<number>(n * t).fill(t)) };
    };
    const requests = () => [request({ x: row(1), t: ints(2) }), request({ x: row(2), t: ints(3) })];

    it('pads the groups to merge them and hands each request its group\'s real shape (PyTriton needs a pad_fn and leaves the padding)', async () => {
      const out = await batch(groupByValues('t')(ragged))(requests());
      expect(out[0]!.y!.shape).toEqual([1, 2]);
      expect(values(out[0]!.y)).toEqual([2, 2]);
      expect(out[1]!.y!.shape).toEqual([1, 3]);
      expect(values(out[1]!.y)).toEqual([3, 3, 3]);
    });

    it('fails without a padFn when a request\'s own rows fell in groups of different shapes, saying how to fix it', async () => {
      const err = await caught(() => batch(groupByValues('t')(ragged))([request({ x: f32([2, 1], 1, 2), t: ints(1, 2) }, { id: 'a' })]));
      expect(err.code).toBe('INFERENCE_FAILED');
      expect(err.message).toBe(
        '@groupByValues: output "y" has dims [1] and [2] in rows of request 0 (id "a"), so its response must keep padding; give a padFn (e.g. constantPadder(0)) to choose the pad value',
      );
    });

    it('merges with a padFn and still cuts each response back', async () => {
      const out = await batch(groupByValues('t', { padFn: constantPadder(-1) })(ragged))(requests());
      expect(out.map((o) => o.y!.shape)).toEqual([
        [1, 2],
        [1, 3],
      ]);
    });

    it('keeps padding a request needs because its own rows fell in groups of different shapes', async () => {
      const out = await batch(groupByValues('t', { padFn: constantPadder(-1) })(ragged))([request({ x: f32([2, 1], 1, 2), t: ints(1, 2) })]);
      expect(out[0]!.y!.shape).toEqual([2, 2]);
      expect(values(out[0]!.y)).toEqual([1, -1, 2, 2]);
    });
  });

  it('fails when groups return different outputs', async () => {
    const fn = batch(groupByValues('t')((inputs): BatchOutputs => ((inputs.t!.data as Int32Array)[0] === 1 ? { y: inputs.x! } : { z: inputs.x! })));
    const err = await caught(() => fn([request({ x: row(1), t: ints(1) }), request({ x: row(2), t: ints(2) })]));
    expect(err.message).toMatch(/every group must return the same outputs; group 0 returned \[y\], group 1 returned \[z\]/);
  });

  it('fails when a key input is not in the batch', async () => {
    const fn = batch(groupByValues('nope')((inputs) => ({ y: inputs.x! })));
    const err = await caught(() => fn([request({ x: row(1) })]));
    expect(err.message).toMatch(/@groupByValues: input "nope" is not a batched input of this batch \(batched: x\)/);
  });

  it('needs something to group by', async () => {
    expect((await caught(() => groupByValues())).message).toMatch(/needs at least one input name or parameter/);
    expect((await caught(() => (groupByValues as unknown as (f: unknown) => unknown)((i: unknown) => i))).message).toMatch(
      /@groupByValues needs arguments: write @groupByValues\('input'\)/,
    );
  });
});
