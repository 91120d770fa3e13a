import type { Request, Response } from '../../../lib/callable/callable';
import { TritonError, UnrecoverableError } from '../../../lib/base/errors';
import { instanceFactory } from '../../../lib/callable/infer-func';
import { InProcessInstance } from '../../../lib/instances/in-process-instance';
import type { HealthEvent, InstanceContext } from '../../../lib/instances/instance';

const cpu = { kind: 'cpu' as const, id: 0 };
const context = (instanceName = 'm_0'): InstanceContext => ({
  modelName: 'm',
  modelVersion: '1',
  modelConfig: { name: 'm', max_batch_size: 8 },
  instanceName,
  device: cpu,
});
const requests = (n: number): Request[] =>
  Array.from({ length: n }, (_, i) => ({ inputs: {}, parameters: {}, requestedOutputs: [], id: `r${i}`, signal: new AbortController().signal }));
const ok = (rs: Request[]): Response[] => rs.map((r) => ({ id: { shape: [1], data: [r.id] } }));

describe('InProcessInstance', () => {
  it('runs a raw callable, without needing start()', async () => {
    const inst = new InProcessInstance('m_0', cpu, ok);
    expect(inst.healthy).toBe(true);
    expect(await inst.execute(requests(2))).toEqual(ok(requests(2)));
  });

  it('calls initialize(context) on start and finalize() on close, once, in order', async () => {
    const calls: unknown[] = [];
    const model = {
      initialize: (ctx: InstanceContext) => void calls.push(['initialize', ctx]),
      infer: (rs: Request[]) => {
        calls.push(['infer', rs.length]);
        return ok(rs);
      },
      finalize: async () => void calls.push(['finalize']),
    };
    const inst = new InProcessInstance('m_0', cpu, model);
    const events: HealthEvent[] = [];
    inst.onHealthChange((e) => events.push(e));
    await inst.start(context());
    await inst.execute(requests(3));
    await Promise.all([inst.close(), inst.close()]);
    expect(calls).toEqual([['initialize', context()], ['infer', 3], ['finalize']]);
    expect(inst.healthy).toBe(false);
    expect(events.map((e) => e.healthy)).toEqual([true, false]);
    await expect(inst.execute(requests(1))).rejects.toThrow('instance m_0 is closed');
  });

  it('constructs a class with the context when it starts', async () => {
    const constructed: InstanceContext[] = [];
    class Model {
      constructor(ctx: InstanceContext) {
        constructed.push(ctx);
      }
      infer = ok;
    }
    const inst = new InProcessInstance('m_1', cpu, Model);
    expect(inst.healthy).toBe(false);
    await expect(inst.execute(requests(1))).rejects.toThrow('instance m_1 is not started');
    await inst.start(context('m_1'));
    expect(inst.healthy).toBe(true);
    expect(constructed).toEqual([context('m_1')]);
    expect(await inst.execute(requests(1))).toEqual(ok(requests(1)));
  });

  it('builds a factory’s callable when it starts', async () => {
    const factory = instanceFactory(async (ctx) => (rs: Request[]) => rs.map(() => ({ who: { shape: [1], data: [ctx.instanceName] } })));
    const inst = new InProcessInstance('m_2', cpu, factory);
    await inst.start(context('m_2'));
    expect(await inst.execute(requests(1))).toEqual([{ who: { shape: [1], data: ['m_2'] } }]);
  });

  it('rejects a bad object at construction, so bind() fails at once', () => {
    expect(() => new InProcessInstance('m_0', cpu, { nothing: 1 }, 'm')).toThrow(/model 'm': inferFunc object has no method decorated/);
  });

  it('fails start with a TritonError naming the instance, and keeps UnrecoverableError as it is', async () => {
    const failing = new InProcessInstance('m_0', cpu, { infer: ok, initialize: () => Promise.reject(new Error('no weights')) });
    const err = await failing.start(context()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).code).toBe('INFERENCE_FAILED');
    expect((err as TritonError).message).toBe('instance m_0 failed to start: no weights');
    expect(failing.healthy).toBe(false);

    const lost = new InProcessInstance('m_0', cpu, { infer: ok, initialize: () => { throw new UnrecoverableError('device lost'); } });
    await expect(lost.start(context())).rejects.toBeInstanceOf(UnrecoverableError);
  });

  it('does not call finalize() when start() never completed', async () => {
    const finalize = jest.fn();
    const inst = new InProcessInstance('m_0', cpu, { infer: ok, finalize });
    await inst.close();
    expect(finalize).not.toHaveBeenCalled();
  });

  it('checks that the callable answers one response per request', async () => {
    const inst = new InProcessInstance('m_0', cpu, (rs: Request[]) => ok(rs).slice(1));
    await expect(inst.execute(requests(2))).rejects.toThrow('instance m_0: the callable must return one response per request (2), got 1 responses');
  });
});
