import { tensor, type InstanceContext, type Request } from '../../../lib';
import { batch, fillOptionals, groupByKeys } from '../../../decorators';
import { call, caught, f32, INSTANCE, request, row, values } from './helpers';

/** A raw callable that records the requests it gets. */
function recorder() {
  const seen: Request[][] = [];
  const fn = (requests: Request[]) => {
    seen.push(requests);
    return requests.map(() => ({}));
  };
  return { seen, fn };
}

const NON_BATCHING: InstanceContext = { ...INSTANCE, modelConfig: { ...INSTANCE.modelConfig, max_batch_size: 0 } };

describe('@fillOptionals', () => {
  it('fills a missing input per request, with that request\'s batch size, and leaves the requests it was given alone', async () => {
    const { seen, fn } = recorder();
    const wrapped = fillOptionals({ temperature: f32([1], 0.7) })(fn);
    const given = [request({ x: f32([3, 1], 1, 2, 3) }), request({ x: row(4), temperature: f32([1, 1], 0.1) })];
    await call(wrapped, given, INSTANCE);
    const [first, second] = seen[0]!;
    expect(first!.inputs.temperature!.shape).toEqual([3, 1]);
    expect(values(first!.inputs.temperature)).toEqual([0.7, 0.7, 0.7].map(Math.fround));
    expect(second).toBe(given[1]);
    expect('temperature' in given[0]!.inputs).toBe(false);
  });

  it('builds plain-value defaults from the model config (datatype and dims)', async () => {
    const { seen, fn } = recorder();
    await call(fillOptionals({ temperature: 0.5, mode: 'greedy', steps: 10 })(fn), [request({ x: f32([2, 1], 1, 2) })], INSTANCE);
    const inputs = seen[0]![0]!.inputs;
    expect([inputs.temperature!.dtype, inputs.temperature!.shape]).toEqual(['FP32', [2, 1]]);
    expect([inputs.mode!.dtype, values(inputs.mode)]).toEqual(['BYTES', ['greedy', 'greedy']]);
    expect([inputs.steps!.dtype, values(inputs.steps)]).toEqual(['INT64', [10, 10]]);
  });

  it('does not add a batch dim for a model that does not batch', async () => {
    const { seen, fn } = recorder();
    await call(fillOptionals({ temperature: 0.5 })(fn), [request({ x: f32([2], 1, 2) })], NON_BATCHING);
    expect(seen[0]![0]!.inputs.temperature!.shape).toEqual([1]);
  });

  it('lets filled requests batch with those that sent the input (fill, then group, then batch)', async () => {
    const batches: number[] = [];
    const fn = fillOptionals({ temperature: 0.5 })(
      groupByKeys(
        batch((inputs, ctx) => {
          batches.push(ctx.requests.length);
          return { y: inputs.temperature! };
        }),
      ),
    );
    const out = await call(fn, [request({ x: row(1) }), request({ x: row(2), temperature: f32([1, 1], 0.9) })], INSTANCE);
    expect(batches).toEqual([2]);
    expect(out.map((o) => values(o.y)[0])).toEqual([0.5, Math.fround(0.9)]);
  });

  describe('errors', () => {
    const one = () => [request({ x: row(1) }, { id: 'r0' })];

    it('a default whose datatype differs from the model config', async () => {
      const err = await caught(() => call(fillOptionals({ temperature: tensor('FP64', [1], new Float64Array([1])) })(recorder().fn), one(), INSTANCE));
      expect(err.code).toBe('INFERENCE_FAILED');
      expect(err.message).toBe('@fillOptionals: default for input "temperature" is FP64, but model \'m\' declares FP32');
    });

    it('a default whose shape differs from the model config', async () => {
      const err = await caught(() => call(fillOptionals({ temperature: f32([2], 1, 2) })(recorder().fn), one(), INSTANCE));
      expect(err.message).toMatch(/default for input "temperature" has shape \[2\], but model 'm' declares \[1\]/);
    });

    it('a default for an input the model does not declare', async () => {
      const err = await caught(() => call(fillOptionals({ tempreature: 0.5 })(recorder().fn), one(), INSTANCE));
      expect(err.message).toMatch(/input "tempreature" has a default, but model 'm' declares no such input \(inputs: x, temperature, mode, steps\)/);
    });

    it('a plain value that is not of the input\'s datatype', async () => {
      const err = await caught(() => call(fillOptionals({ steps: 1.5 })(recorder().fn), one(), INSTANCE));
      expect(err.message).toMatch(/default for input "steps" \(model 'm' declares INT64 \[1\]\): value 1.5 is not a INT64 value/);
    });

    it('a plain value when no model config is available', async () => {
      const err = await caught(() => call(fillOptionals({ temperature: 0.5 })(recorder().fn), one()));
      expect(err.message).toMatch(/the default of input "temperature" is a plain value, but no model config gives its datatype.*give a tensor/);
    });

    it('without a model config, a default that disagrees with a request that sent the input', async () => {
      const wrapped = fillOptionals({ temperature: f32([1], 0.5) })(recorder().fn);
      const err = await caught(() =>
        call(wrapped, [request({ x: row(1) }), request({ x: row(2), temperature: tensor('INT32', [1, 1], new Int32Array([1])) }, { id: 'b' })]),
      );
      expect(err.message).toBe('@fillOptionals: default for input "temperature" is FP32 [1], but request 1 (id "b") sent INT32 [1,1] (with the batch dim)');
    });

    it('a malformed default, when the decorator is made', async () => {
      const bad = { dtype: 'FP32', shape: [2], data: new Float32Array(1) } as const;
      const err = await caught(() => fillOptionals({ temperature: bad }));
      expect(err.code).toBe('INVALID_CONFIG');
      expect(err.message).toMatch(/default for input "temperature" has shape \[2\] but 1 elements/);
      expect((await caught(() => fillOptionals({ temperature: [] }))).message).toMatch(/is an empty list/);
    });
  });
});
