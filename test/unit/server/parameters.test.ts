import { TritonError } from '../../../lib/base/errors';
import type { Model } from '../../../lib/model/model';
import { classificationOf } from '../../../lib/server/extensions';
import { parseParameters } from '../../../lib/server/parameters';
import { thrownBy } from '../../helpers/caught';

const errorOf = (fn: () => unknown): TritonError => thrownBy<TritonError>(fn);

const noPrototype = Object.create(null) as object;

describe('parseParameters refuses a wrong type as INVALID_ARGUMENT, naming the parameter and the value', () => {
  it.each<[string, unknown, RegExp]>([
    ['parameters that are a BigInt', 12345678901234567890n, /request 'parameters' must be an object, got 12345678901234567890/],
    ['parameters that are an array', [1], /request 'parameters' must be an object, got \[1\]/],
    ['a priority that is a string', { priority: '1' }, /parameter 'priority' must be a non-negative integer, got "1"/],
    ['a negative priority beyond 2^64', { priority: -12345678901234567890n }, /'priority' must be a non-negative integer, got -12345678901234567890/],
    ['a fractional timeout', { timeout: 1.5 }, /parameter 'timeout' must be a non-negative integer, got 1.5/],
    ['a timeout that is an object without a prototype', { timeout: noPrototype }, /'timeout' must be a non-negative integer, got \{\}/],
    ['binary_data_output that is a number', { binary_data_output: 1 }, /'binary_data_output' must be a boolean, got 1/],
    ['sequence_start that is a string', { sequence_start: 'yes' }, /^invalid value type for 'sequence_start' parameter, expected bool_param, got "yes"$/],
    ['sequence_end that is a number', { sequence_end: 1 }, /^invalid value type for 'sequence_end' parameter, expected bool_param, got 1$/],
    ['a fractional sequence_id', { sequence_id: 1.5 }, /^invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got 1.5$/],
    ['a negative sequence_id', { sequence_id: -3 }, /'sequence_id' parameter, expected int64_param or string_param, got -3/],
    ['a sequence_id that is a double beyond 2^64 (JSON 1e20, gRPC double_param)', { sequence_id: 1e20 }, /^invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got 100000000000000000000: a correlation id is an integer from 0 to 18446744073709551615/],
    ['a sequence_id that is a double beyond 2^53', { sequence_id: 2 ** 60 }, /'sequence_id' parameter, expected int64_param or string_param, got 1152921504606847000: .* exact below 2\^53 only/],
    ['a sequence_id of 2^64 (a BigInt)', { sequence_id: 2n ** 64n }, /'sequence_id' parameter, .*got 18446744073709551616: a correlation id is an integer from 0 to 18446744073709551615/],
    ['a negative sequence_id beyond 2^53 (gRPC int64_param)', { sequence_id: -(2n ** 60n) }, /^invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got -1152921504606846976$/],
    ['a sequence_id that is not finite', { sequence_id: Infinity }, /^invalid value type for 'sequence_id' parameter, expected int64_param or string_param, got Infinity$/],
    ['a custom parameter holding a BigInt in an object', { p: { x: 12345678901234567890n } }, /parameter 'p' has an invalid type: .* got \{"x":12345678901234567890\}/],
    ['a custom parameter that is null', { p: null }, /parameter 'p' has an invalid type: .* got null/],
    ['a custom parameter that is not finite', { p: Infinity }, /got Infinity/],
    ['a triton_ key', { triton_x: 1 }, /reserved for Triton usage/],
  ])('%s', (_what, raw, message) => {
    const err = errorOf(() => parseParameters(raw, 'request'));
    expect(err).toBeInstanceOf(TritonError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
  });

  it('reads sequence_id (integer, BigInt or string) with its START and END flags', () => {
    expect(parseParameters({ sequence_id: 7, sequence_start: true }, 'request').sequence).toEqual({ id: 7, start: true, end: false });
    expect(parseParameters({ sequence_end: true, sequence_id: 'a' }, 'request').sequence).toEqual({ id: 'a', start: false, end: true });
    expect(parseParameters({ sequence_id: 18446744073709551615n }, 'request').sequence).toEqual({ id: 18446744073709551615n, start: false, end: false });
    expect(parseParameters({ priority: 1 }, 'request').sequence).toBeUndefined();
  });

  it('keeps a custom __proto__ parameter as an own entry', () => {
    const raw = JSON.parse('{"__proto__":"x","tag":"y"}') as unknown;
    const { parameters } = parseParameters(raw, 'request');
    expect(Object.getPrototypeOf(parameters)).toBe(Object.prototype);
    expect(Object.keys(parameters)).toEqual(['__proto__', 'tag']);
    expect(parameters.__proto__).toBe('x');
  });
});

describe('classificationOf', () => {
  const model = { outputs: [{ name: 'Y', labels: ['a', 'b'] }], config: { effectiveMaxBatchSize: 4 } } as unknown as Model;

  it.each<[string, unknown, RegExp]>([
    ['an object without a prototype', noPrototype, /got \{\}/],
    ['a negative BigInt', -12345678901234567890n, /got -12345678901234567890/],
    ['an integer beyond 2^53', 12345678901234567890n, /got 12345678901234567890/],
    ['a string', '2', /got "2"/],
    ['a fraction', 0.5, /got 0.5/],
  ])('refuses %s as INVALID_ARGUMENT', (_what, value, message) => {
    const err = errorOf(() => classificationOf(value, model, 'Y'));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/^output 'Y': 'classification' must be a non-negative integer \(the number of classes\), /);
    expect(err.message).toMatch(message);
  });

  it('reads a count with the output labels', () => {
    expect(classificationOf(2n, model, 'Y')).toEqual({ count: 2, batched: true, labels: ['a', 'b'] });
    expect(classificationOf(0, model, 'Y')).toBeUndefined();
  });
});
