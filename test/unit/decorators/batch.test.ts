import { getEventListeners } from 'node:events';
import { TritonError, tensor } from '../../../lib';
import { NEVER_ABORTED } from '../../../lib/callable/callable-marks';
import { batch, groupByKeys, padBatch, sample, type BatchContext } from '../../../decorators';
import { call, caught, deferred, f32, INSTANCE, request, row, values } from './helpers';

describe('@batch context (parameters survive batching)', () => {
  it('lists each request, its rows and its parameters, in batch order', async () => {
    let seen: BatchContext | undefined;
    const fn = batch((inputs, ctx) => {
      seen = ctx;
      return { y: inputs.x! };
    });
    await fn([
      request({ x: row(1) }, { id: 'a', parameters: { temperature: 0.5 } }),
      request({ x: f32([2, 1], 2, 3) }, { id: 'b', parameters: { temperature: 0.9, seed: 7n } }),
    ]);
    expect(seen!.requests.map((r) => r.id)).toEqual(['a', 'b']);
    expect(seen!.rows).toEqual([1, 2]);
    expect(seen!.parameters).toEqual([{ temperature: 0.5 }, { temperature: 0.9, seed: 7n }]);
    expect(seen!.batchParameters).toEqual({});
  });

  it('passes the instance context the server gives the raw callable, and undefined without one', async () => {
    const instances: unknown[] = [];
    const fn = batch((inputs, ctx) => {
      instances.push(ctx.instance);
      return { y: inputs.x! };
    });
    await call(fn, [request({ x: row(1) })], INSTANCE);
    await call(fn, [request({ x: row(1) })]);
    expect(instances).toEqual([INSTANCE, undefined]);
  });

  it('gives warmup calls the same context (PyTriton #111)', async () => {
    let seen: BatchContext | undefined;
    const fn = batch((inputs, ctx) => {
      seen = ctx;
      return { y: inputs.x! };
    });
    const warmup = { ...request({ x: row(0, 0) }, { id: 'warmup:zeros' }), signal: NEVER_ABORTED };
    await call(fn, [warmup], INSTANCE);
    expect(seen!.instance?.modelName).toBe('m');
    expect(seen!.requests[0]!.id).toBe('warmup:zeros');
    expect(seen!.signal.aborted).toBe(false);
  });

  it('aborts the batch signal only once every request is cancelled, and drops its listeners after the call', async () => {
    const a = new AbortController();
    const b = new AbortController();
    const hold = deferred();
    let signal: AbortSignal | undefined;
    const fn = batch(async (inputs, ctx) => {
      signal = ctx.signal;
      await hold.promise;
      return { y: inputs.x! };
    });
    const running = fn([request({ x: row(1) }, { signal: a.signal }), request({ x: row(2) }, { signal: b.signal })]);
    await Promise.resolve();
    a.abort(new Error('a left'));
    expect(signal!.aborted).toBe(false);
    b.abort(new Error('b left'));
    expect(signal!.aborted).toBe(true);
    expect((signal!.reason as Error).message).toBe('b left');
    hold.resolve();
    await running;

    const c = new AbortController();
    const d = new AbortController();
    await fn([request({ x: row(1) }, { signal: c.signal }), request({ x: row(2) }, { signal: d.signal })]);
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(d.signal, 'abort')).toHaveLength(0);
  });

  it('concatenates an input once, on first read', async () => {
    let same = false;
    const fn = batch((inputs) => {
      same = inputs.x === inputs.x;
      return { y: inputs.x! };
    });
    const out = await fn([request({ x: row(1, 2) }), request({ x: row(3, 4) })]);
    expect(same).toBe(true);
    expect(values(out[1]!.y)).toEqual([3, 4]);
  });

  it('fails clearly when an input read by the function differs in shape across requests', async () => {
    const fn = batch((inputs) => ({ y: inputs.x! }));
    const run = fn([request({ x: row(1, 2) }, { id: 'a' }), request({ x: row(1, 2, 3) }, { id: 'b' })]);
    await expect(run).rejects.toThrow(TritonError);
    await expect(run).rejects.toThrow(
      /@batch: input "x" cannot be batched: request 0 \(id "a"\) has dims \[2\], request 1 \(id "b"\) has \[3\]; put @padBatch below @batch/,
    );
  });

  it('does not fail on a mismatched input the function never reads', async () => {
    const fn = batch((inputs) => ({ y: inputs.n! }));
    const n = (v: number) => tensor('INT32', [1], new Int32Array([v]));
    const out = await fn([request({ x: row(1, 2), n: n(1) }), request({ x: row(1, 2, 3), n: n(2) })]);
    expect(out.map((o) => values(o.y))).toEqual([[1], [2]]);
  });

  it('refuses to wrap a request-level decorator, at decoration time', async () => {
    const err = await caught(() => batch(groupByKeys(async () => []) as never));
    expect(err.code).toBe('INVALID_CONFIG');
    expect(err.message).toMatch(/@batch cannot wrap @groupByKeys, which already takes the list of requests; put @groupByKeys above @batch/);
  });
});

describe('@sample context', () => {
  it('passes each request its own context, with the instance', async () => {
    const seen: string[] = [];
    const fn = sample((inputs, req, ctx) => {
      seen.push(`${ctx.requests.length}:${ctx.requests[0]!.id}:${ctx.instance?.instanceName}:${ctx.signal === req.signal}`);
      return { y: inputs.x! };
    });
    await call(fn, [request({ x: row(1) }, { id: 'a' }), request({ x: row(2) }, { id: 'b' })], INSTANCE);
    expect(seen).toEqual(['1:a:m_1:true', '1:b:m_1:true']);
  });

  it('refuses to wrap a batch-level decorator', () => {
    expect(() => sample(padBatch((i) => i) as never)).toThrow(/@sample cannot wrap @padBatch, which works on batches: use @batch above it/);
  });
});
