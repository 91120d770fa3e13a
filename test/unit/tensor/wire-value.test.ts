import { describeValue, setEntry } from '../../../lib/tensor/wire-value';

describe('describeValue', () => {
  const noPrototype = Object.create(null) as Record<string, unknown>;
  noPrototype.a = 1;
  const protoKey = JSON.parse('{"__proto__":5}') as unknown;

  it.each<[string, unknown, string]>([
    ['a BigInt', 12345678901234567890n, '12345678901234567890'],
    ['a BigInt inside an object', { x: 12345678901234567890n }, '{"x":12345678901234567890}'],
    ['a string, quoted', 'FP8', '"FP8"'],
    ['a number', 1.5, '1.5'],
    ['a non-finite number', Infinity, 'Infinity'],
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined'],
    ['a boolean', false, 'false'],
    ['an array', [1, 'a', [null]], '[1,"a",[null]]'],
    ['an object without a prototype', noPrototype, '{"a":1}'],
    ['an own __proto__ key', protoKey, '{"__proto__":5}'],
    ['nesting beyond three levels', [[[[1]]]], '[[[[...]]]]'],
    ['bytes', Buffer.alloc(3), 'Buffer(3 bytes)'],
    ['a function', () => 1, 'function'],
  ])('shows %s', (_what, value, shown) => {
    expect(describeValue(value)).toBe(shown);
  });

  it('cuts long values after 64 characters, never inside a surrogate pair', () => {
    expect(describeValue('x'.repeat(1e6))).toBe(`"${'x'.repeat(63)}...`);
    expect(describeValue(Array.from({ length: 1e5 }, (_, i) => i))).toMatch(/^\[0,1,2,.*\.\.\.$/);
    expect(describeValue(Array.from({ length: 1e5 }, (_, i) => i)).length).toBe(67);
    const emoji = describeValue('\ud83d\ude00'.repeat(100));
    expect(emoji.length).toBeLessThanOrEqual(67);
    expect(emoji.endsWith('\ud83d\ude00...')).toBe(true);
  });
});

describe('setEntry', () => {
  it('stores __proto__ as an own entry, leaving the prototype alone', () => {
    const record: Record<string, unknown> = {};
    setEntry(record, '__proto__', { polluted: true });
    setEntry(record, 'a', 1);
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
    expect((record as { polluted?: boolean }).polluted).toBeUndefined();
    expect(Object.keys(record)).toEqual(['__proto__', 'a']);
  });
});
