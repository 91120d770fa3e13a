import { NEVER_ABORTED, type Request } from '../../../lib';
import { batch, firstValue, tritonContext, type BatchContext, type TritonContext } from '../../../decorators';
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
