import type { Request, Response } from '../../../lib/callable/callable';
import { batch } from '../../../decorators';
import { TritonError } from '../../../lib/base/errors';
import { buildCallable, instanceFactory, isClass, isInstanceFactory, loadCallable, needsContext } from '../../../lib/callable/infer-func';
import type { InstanceContext } from '../../../lib/instances/instance';

const context: InstanceContext = {
  modelName: 'm',
  modelVersion: '1',
  modelConfig: { name: 'm' },
  instanceName: 'm_0',
  device: { kind: 'gpu', id: 1 },
};

const requests: Request[] = [{ inputs: {}, parameters: {}, requestedOutputs: [], id: 'r', signal: new AbortController().signal }];
const tag = (value: string) => (rs: Request[]): Response[] => rs.map(() => ({ tag: { shape: [1], data: [value] } }));
const run = async (entry: unknown) => (await buildCallable(entry, context)).callable(requests);

describe('buildCallable: how an export or inferFunc entry becomes a callable', () => {
  it('1. uses a decorated function as the raw callable', async () => {
    const fn = batch(() => ({ tag: { shape: [1], data: ['decorated'] } }));
    expect(await run(fn)).toEqual([{ tag: { shape: [1], data: ['decorated'] } }]);
  });

  it('2. constructs a class with the context, then uses its method and hooks', async () => {
    const seen: unknown[] = [];
    class Model {
      constructor(readonly ctx: InstanceContext) {
        seen.push(['constructor', ctx.instanceName]);
      }
      initialize(ctx: InstanceContext) {
        seen.push(['initialize', ctx.device]);
      }
      infer(rs: Request[]) {
        return tag(`class on ${this.ctx.device.kind}:${this.ctx.device.id}`)(rs);
      }
      finalize() {
        seen.push(['finalize']);
      }
    }
    expect(isClass(Model)).toBe(true);
    expect(needsContext(Model)).toBe(true);
    const loaded = await buildCallable(Model, context);
    await loaded.initialize?.(context);
    expect(await loaded.callable(requests)).toEqual(tag('class on gpu:1')(requests));
    await loaded.finalize?.();
    expect(seen).toEqual([['constructor', 'm_0'], ['initialize', { kind: 'gpu', id: 1 }], ['finalize']]);
  });

  it('3. calls a factory with the context, awaits it and resolves what it returns', async () => {
    const factory = instanceFactory(async (ctx) => tag(`factory for ${ctx.instanceName}`));
    expect(isInstanceFactory(factory)).toBe(true);
    expect(await run(factory)).toEqual(tag('factory for m_0')(requests));
    const objectFactory = instanceFactory((ctx) => ({ infer: tag(`object from ${ctx.modelName}`), finalize: () => undefined }));
    const loaded = await buildCallable(objectFactory, context);
    expect(loaded.finalize).toBeInstanceOf(Function);
    expect(await loaded.callable(requests)).toEqual(tag('object from m')(requests));
  });

  it('4. uses any other function as the raw callable, never calling it with the context', async () => {
    const fn = jest.fn(tag('raw'));
    expect(needsContext(fn)).toBe(false);
    expect(await run(fn)).toEqual(tag('raw')(requests));
    expect(fn).toHaveBeenCalledTimes(1);
    expect(fn).toHaveBeenCalledWith(requests);
  });

  it('5. takes an object’s decorated method (bound to it) and its lifecycle hooks', async () => {
    const obj = {
      label: 'bound',
      initialize: jest.fn(),
      finalize: jest.fn(),
      run: batch(function (this: { label: string }) {
        return { tag: { shape: [1], data: [this.label] } };
      }),
    };
    const loaded = loadCallable(obj, 'm');
    expect(await loaded.callable(requests)).toEqual([{ tag: { shape: [1], data: ['bound'] } }]);
    await loaded.initialize?.(context);
    await loaded.finalize?.();
    expect(obj.initialize).toHaveBeenCalledWith(context);
    expect(obj.finalize).toHaveBeenCalledTimes(1);
  });

  it('does not take an ES5 constructor function or an arrow function for a class', () => {
    function Legacy(this: unknown) {}
    expect(isClass(Legacy)).toBe(false);
    expect(isClass(() => undefined)).toBe(false);
    expect(isClass(class {})).toBe(true);
  });

  it.each([
    ['a factory returning a non-object', instanceFactory(() => 'nothing' as unknown as object), /factory must return a callable or an object .* got string/],
    ['a factory returning a class', instanceFactory(() => class {}), /returned a class/],
    ['an object without infer or a decorated method', { other() {} }, /no method decorated with @batch or @sample and no 'infer' method/],
    ['a number', 42, /must be a function or an object .* got number/],
  ])('rejects %s with INVALID_CONFIG', async (_what, entry, message) => {
    const err = await buildCallable(entry, context).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).code).toBe('INVALID_CONFIG');
    expect((err as TritonError).message).toMatch(message);
  });

  it('rejects instanceFactory of a non-function', () => {
    expect(() => instanceFactory('x' as never)).toThrow(/instanceFactory expects a function, got string/);
  });
});
