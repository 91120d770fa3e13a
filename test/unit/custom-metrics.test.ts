import { checkFamilySpec, checkLabels, checkUpdate, type MetricFamilySpec } from '../../lib/callable/custom-metrics';

const counter: MetricFamilySpec = { name: 'tokens_total', description: 'Tokens', kind: 'counter', labels: ['stage'] };

describe('custom metric checks', () => {
  it.each([
    [{ name: '1bad', description: '', kind: 'counter' }, /the name must match/],
    [{ name: 'nv_mine', description: '', kind: 'counter' }, /names starting with nv_ are Triton's own/],
    [{ name: 'x', description: '', kind: 'summary' }, /kind must be one of counter, gauge, histogram/],
    [{ name: 'x', description: '', kind: 'counter', labels: ['model'] }, /label 'model' is not allowed/],
    [{ name: 'x', description: '', kind: 'counter', buckets: [1] }, /only a histogram has buckets/],
    [{ name: 'x', description: '', kind: 'histogram', buckets: [2, 1] }, /ascending order/],
  ])('refuses family %j', (spec, message) => {
    expect(() => checkFamilySpec(spec as MetricFamilySpec)).toThrow(message);
  });

  it('accepts a family and copies it', () => {
    expect(checkFamilySpec(counter)).toEqual({ ...counter, labels: ['stage'] });
  });

  it.each([
    ['set', 1, /a counter cannot be set/],
    ['observe', 1, /a counter cannot observe/],
    ['increment', -1, /a counter cannot decrease/],
    ['increment', NaN, /finite number/],
  ] as const)('refuses %s(%d) on a counter', (op, v, message) => {
    expect(() => checkUpdate(counter, op, v)).toThrow(message);
  });

  it('labels must be exactly the declared ones', () => {
    expect(checkLabels(counter, { stage: 'decode' })).toEqual({ stage: 'decode' });
    expect(() => checkLabels(counter, {})).toThrow(/labels must be exactly \[stage\], got \[\]/);
    expect(() => checkLabels(counter, { stage: 'a', other: 'b' })).toThrow(/got \[stage, other\]/);
  });
});
