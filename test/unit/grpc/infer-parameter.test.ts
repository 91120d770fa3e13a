import { fromInferParameters, int64Value, toInferParameters } from '../../../lib/protocol/infer-parameter';

describe('fromInferParameters', () => {
  it.each([
    [{ bool_param: true, parameter_choice: 'bool_param' }, true],
    [{ int64_param: '-42', parameter_choice: 'int64_param' }, -42],
    [{ int64_param: '9007199254740993', parameter_choice: 'int64_param' }, 9007199254740993n],
    [{ uint64_param: '18446744073709551615', parameter_choice: 'uint64_param' }, 18446744073709551615n],
    [{ string_param: '', parameter_choice: 'string_param' }, ''],
    [{ double_param: 0.5, parameter_choice: 'double_param' }, 0.5],
    // Without `oneofs`, the set field is found by presence.
    [{ int64_param: 7 }, 7],
    [{ bool_param: false }, false],
  ])('turns %j into %p', (param, value) => {
    expect(fromInferParameters({ k: param }, 'request')).toEqual({ k: value });
  });

  it('refuses a parameter with no value set, naming it', () => {
    expect(() => fromInferParameters({ empty: {} }, 'request')).toThrow("request parameter 'empty' has no value set");
  });

  it('takes a missing map as no parameters', () => {
    expect(fromInferParameters(undefined, 'request')).toEqual({});
  });
});

describe('int64Value', () => {
  it('keeps safe integers as numbers and the rest as BigInt', () => {
    expect(int64Value('9007199254740991')).toBe(9007199254740991);
    expect(int64Value('-9007199254740993')).toBe(-9007199254740993n);
    expect(int64Value(12)).toBe(12);
  });
});

describe('toInferParameters', () => {
  it('maps values as tritonclient does', () => {
    expect(toInferParameters({ s: 'x', b: true, i: 3, d: 0.25, big: 2n ** 63n - 1n })).toEqual({
      s: { string_param: 'x' },
      b: { bool_param: true },
      i: { int64_param: 3 },
      d: { double_param: 0.25 },
      big: { int64_param: '9223372036854775807' },
    });
  });

  it('round-trips through fromInferParameters', () => {
    const values = { s: 'x', b: false, i: -3, d: 1.5, big: -(2n ** 62n) };
    expect(fromInferParameters(toInferParameters(values), 'request')).toEqual(values);
  });
});
