import type * as lib from '../../../lib';
import type { Request } from '../../../lib';
import { NEVER_ABORTED } from '../../../lib/callable/callable-marks';
import { batch, firstValue, groupByValues, padBatch, tritonContext, type BatchContext, type BatchDecorator, type TritonContext } from '../../../decorators';
import { call, caught, INSTANCE, request, row } from './helpers';

describe('@tritonContext', () => {
  it('gives a raw callable the instance, the requests and a signal', async () => {
    let ctx: TritonContext | undefined;
    const fn = tritonContext((requests, c) => {
      ctx = c;
      return requests.map(() => ({}));
    });
    const given = [request({ x: row(1) }, { id: 'a' }), request({ x: row(2) }, { id: 'b' })];
    await call(fn, given, INSTANCE);
    expect(ctx!.instance).toEqual(INSTANCE);
    expect(ctx!.requests).toEqual(given);
    expect(ctx!.signal.aborted).toBe(false);
  });

  it('is available during warmup (PyTriton #111)', async () => {
    let name: string | undefined;
    const fn = tritonContext((requests: Request[], c) => {
      name = `${c.instance?.modelName}/${c.instance?.modelVersion}/${c.requests[0]?.id}`;
      return requests.map(() => ({}));
    });
    await call(fn, [{ ...request({ x: row(0) }, { id: 'warmup:zeros' }), signal: NEVER_ABORTED }], INSTANCE);
    expect(name).toBe('m/3/warmup:zeros');
  });

  it('changes nothing below @batch, where the batch context is always passed', async () => {
    let ctx: BatchContext | undefined;
    const inner = (inputs: Record<string, never>, c: BatchContext) => {
      ctx = c;
      return { y: inputs.x };
    };
    const fn = batch(firstValue('t')(tritonContext(inner as never) as never));
    await call(fn, [request({ x: row(1), t: row(2) })], INSTANCE);
    expect(ctx!.rows).toEqual([1]);
    expect(ctx!.instance?.instanceName).toBe('m_1');
  });

  it('cannot wrap a request-level decorator, whose context would go nowhere', async () => {
    const err = await caught(() => tritonContext(batch((i) => i) as never));
    expect(err.message).toBe('@tritonContext cannot wrap @batch, which already takes the list of requests; put @batch above @tritonContext');
  });

  it('fails at call time on a batch-level function used without @batch', async () => {
    const fn = tritonContext(firstValue('x')((i) => i) as never);
    expect((await caught(() => fn([request({ x: row(1) })]))).message).toBe('@tritonContext wraps @firstValue, which works on batches: put @batch above them');
  });
});

describe('signals of requests that make them on demand (as the server’s requests do)', () => {
  /** A request whose `signal` is a getter on its prototype that counts the reads. */
  class LazyRequest implements Request {
    reads = 0;
    readonly parameters = { k: 'v' };
    readonly requestedOutputs: string[] = [];
    readonly id = '';
    private readonly controller = new AbortController();
    constructor(readonly inputs: Request['inputs']) {}
    get signal(): AbortSignal {
      this.reads++;
      return this.controller.signal;
    }
    abort(): void {
      this.controller.abort(new Error('gone'));
    }
  }

  it.each<[string, BatchDecorator]>([
    ['@padBatch', padBatch({ batchSizes: [4] })],
    ['@groupByValues', groupByValues('g')],
    ['@firstValue', firstValue({ parameters: ['k'] })],
  ])('keeps the signal through %s, and makes none unless the function reads it', async (_name, decorator) => {
    let watched: LazyRequest[] = [];
    let seen: boolean[] | undefined;
    const fn = batch(
      decorator(async (inputs: Record<string, lib.Tensor>, context: BatchContext) => {
        if (watched.length > 0) {
          const { signal } = context;
          seen = [signal.aborted];
          for (const r of watched) r.abort();
          seen.push(signal.aborted);
        }
        return { y: inputs.x! };
      }),
    );
    const make = () => [new LazyRequest({ x: row(1), g: row(0) }), new LazyRequest({ x: row(2), g: row(0) })];
    const quiet = make();
    await call(fn, quiet, INSTANCE);
    expect(quiet.map((r) => r.reads)).toEqual([0, 0]);

    watched = make();
    await call(fn, watched, INSTANCE);
    // Not aborted until every request of the batch is; then aborted.
    expect(seen).toEqual([false, true]);
  });
});
