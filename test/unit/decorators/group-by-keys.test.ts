import { tensor, type Request } from '../../../lib';
import { batch, groupByKeys, padBatch, tritonContext } from '../../../decorators';
import { call, caught, INSTANCE, request, row, values } from './helpers';

const flag = (v: number) => tensor('INT32', [1, 1], new Int32Array([v]));

describe('@groupByKeys', () => {
  it('calls once per set of input names and returns the responses in the original order', async () => {
    const groups: string[][] = [];
    const fn = groupByKeys(
      batch((inputs, ctx) => {
        groups.push(ctx.requests.map((r) => r.id));
        const x = inputs.x!.data as Float32Array;
        const b = inputs.b ? (inputs.b.data as Int32Array) : undefined;
        return { y: { shape: inputs.x!.shape, data: x.map((v, i) => v * 10 + (b ? (b[i] as number) : 0)) } };
      }),
    );
    const out = await fn([
      request({ x: row(1) }, { id: 'r0' }),
      request({ x: row(2), b: flag(5) }, { id: 'r1' }),
      request({ x: row(3) }, { id: 'r2' }),
      request({ x: row(4), b: flag(6) }, { id: 'r3' }),
    ]);
    expect(groups).toEqual([
      ['r0', 'r2'],
      ['r1', 'r3'],
    ]);
    expect(out.map((o) => values(o.y)[0])).toEqual([10, 25, 30, 46]);
  });

  it('lets @batch serve requests that @batch alone rejects', async () => {
    const inner = batch((inputs) => ({ y: inputs.x! }));
    const mixed = () => [request({ x: row(1) }), request({ x: row(2), b: flag(1) })];
    await expect(inner(mixed())).rejects.toThrow(/same inputs/);
    await expect(groupByKeys(inner)(mixed())).resolves.toHaveLength(2);
  });

  it('makes one call when every request has the same inputs', async () => {
    let calls = 0;
    const fn = groupByKeys((requests: Request[]) => {
      calls++;
      return requests.map(() => ({}));
    });
    await fn([request({ x: row(1) }), request({ x: row(2) })]);
    expect(calls).toBe(1);
  });

  it('forwards the instance context to the callable it wraps', async () => {
    let model: string | undefined;
    const fn = groupByKeys(
      tritonContext((requests, ctx) => {
        model = ctx.instance?.modelName;
        return requests.map(() => ({}));
      }),
    );
    await call(fn, [request({ x: row(1) }), request({ b: flag(1) })], INSTANCE);
    expect(model).toBe('m');
  });

  it('fails clearly when a group gets the wrong number of responses', async () => {
    const fn = groupByKeys(() => [{}]);
    const err = await caught(() => fn([request({ x: row(1) }), request({ x: row(2) }), request({ b: flag(1) })]));
    expect(err.code).toBe('INFERENCE_FAILED');
    expect(err.message).toMatch(/@groupByKeys: the wrapped callable returned 1 responses for a group of 2 requests \(inputs \[x\]\)/);
  });

  it('refuses to go below @batch', async () => {
    const err = await caught(() => groupByKeys(padBatch((i) => i) as never));
    expect(err.message).toMatch(/@groupByKeys works on the list of requests and goes above @batch, but it wraps @padBatch/);
  });
});
