import { decodeJsonData } from '../../../lib/tensor/json-codec';
import { JsonFloats, parseJson, parseJsonBytes } from '../../../lib/tensor/lossless-json';
import { TritonError } from '../../../lib/base/errors';
import { thrownBy } from '../../helpers/caught';

/** A deterministic stream of numbers in [0, 1). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

/** Number literals of every shape JSON allows, the awkward ones included. */
function literals(): string[] {
  const next = random(7);
  const out = [
    '0', '-0', '0.0', '-0.0', '1', '-1', '0.5', '1e0', '1E+2', '1e-2', '-2.5E-3', '123456789012345', '1234567890123456',
    '9007199254740991', '9007199254740992', '9007199254740993', '-9223372036854775808', '18446744073709551615',
    '12345678901234567.5', '0.84147098480789650', '-1.2345678901234567e-5', '0.1000000014901161193847656250',
    '3.4028234663852886e38', '3.4028235677973366e38', '3.402823669209385e38', '1e39', '-1e39', '1.401298464324817e-45',
    '7.006492321624085e-46', '7.006492321624087e-46', '1e-46', '2.2250738585072014e-308', '4.9406564584124654e-324', '1e-400',
    '1e400', '-1e400', '1e999999999', '0.000000000000000000000000000000000000000001', `0.${'0'.repeat(300)}1`, `1${'0'.repeat(30)}`,
    '1.00000005960464477539062500', '1.0000000596046447753906250001', '1.00000017881393432617187500', '16777217', '33554435',
    '0.30000001192092896', '0.3000000119209289', '1.5e-7', '123.456e-10', '1e22', '1e23', '9.999999999999999e22',
  ];
  for (let i = 0; i < 2000; i++) {
    const f = Math.fround((next() * 2 - 1) * 10 ** Math.floor(next() * 80 - 40));
    out.push(String(f), String(Math.fround(f)), f.toPrecision(1 + Math.floor(next() * 20)), f.toExponential(Math.floor(next() * 20)));
    // Exactly between two float32 values, and a hair either side of that.
    const bits = new Float32Array([Math.abs(f) || 1]);
    const u = new Uint32Array(bits.buffer);
    const a = bits[0]!;
    u[0]! += 1;
    const mid = (a + bits[0]!) / 2;
    out.push(String(mid), mid.toPrecision(17), mid.toPrecision(21), mid.toExponential(25));
  }
  // Float32 overflow gives Infinity, which has no literal.
  return out.filter((l) => /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(l));
}

describe('parseJsonBytes', () => {
  it('gives what parseJson gives for every kind of number literal', () => {
    for (const lit of literals()) {
      const text = `{"v":${lit},"a":[${lit},[${lit}]]}`;
      expect([lit, parseJsonBytes(Buffer.from(text), 10)]).toEqual([lit, parseJson(text, 10)]);
    }
  });

  it.each([
    '{"s":"12345678901234567890","t":"a\\"b\\\\c\\u00e9","u":"héllo ☃","n":null,"b":[true,false]}',
    ' {\t"a" :\n[ 1 , 2.5e3 , [ ] , { } ] \r} ',
    '{"__proto__":{"x":1},"a":1}',
    '{"a":1,"a":2}',
    '[-9223372036854775808,12345678901234567.5]',
    '"just a string"',
    '{"inputs":[{"name":"A","datatype":"FP32","shape":[2],"data":["1",2]}]}',
    '{"inputs":[{"name":"A","datatype":"FP32","shape":[2],"data":[true,2]}]}',
    '{"inputs":[{"name":"A","datatype":"FP32","shape":[2],"data":[{"x":1},2]}]}',
    '{"inputs":[{"name":"A","data":[1,2],"datatype":"FP32","shape":[2]}]}',
    '{"inputs":[{"name":"A","datatype":"INT64","shape":[2],"data":[9007199254740993,2]}]}',
    '{"parameters":{"data":[1,2]},"inputs":[]}',
  ])('parses %s as parseJson does', (text) => {
    expect(parseJsonBytes(Buffer.from(text), 10, true)).toEqual(parseJson(text, 10));
  });

  it.each([
    '{"a":', '{"a":12345678901234567890', 'nope', '{"a":1,}', '[1,]', '[01]', '[1.]', '[.5]', '[+1]', '[-]', '[1e]', '[1e+]',
    '{"a":"\u0001"}', '{"a":"\\x"}', '{"a" 1}', '[1 2]', '\ufeff{}', '{"inputs":[{"datatype":"FP32","data":[1,2,]}]}',
    '{"inputs":[{"datatype":"FP32","data":[1,,2]}]}', '{"inputs":[{"datatype":"FP32","data":[1,2}]}', '{"inputs":[{"datatype":"FP32","data":[1e5.5]}]}',
    '{"inputs":[{"datatype":"FP32","data":[1,2]]}', '{"inputs":[{"datatype":"FP32","data":[[1],[2]}]}', '{"inputs":[{"datatype":"FP32","data":[-]}]}',
  ])('refuses %s with the error parseJson gives', (text) => {
    const expected = thrownBy<TritonError>(() => parseJson(text, 10));
    const got = thrownBy<TritonError>(() => parseJsonBytes(Buffer.from(text), 10, true));
    expect(got).toBeInstanceOf(TritonError);
    expect([got.code, got.message]).toEqual([expected.code, expected.message]);
  });

  it('enforces the nesting limit inside float data as parseJson does', () => {
    const ok = '{"inputs":[{"datatype":"FP32","data":[[[1]]]}]}'; // depth 6
    const parsed = parseJsonBytes(Buffer.from(ok), 6, true) as { inputs: { data: JsonFloats }[] };
    expect(parsed.inputs[0]!.data.elements()).toEqual([[[1]]]);
    expect(parseJsonBytes(Buffer.from(ok), 6)).toEqual(parseJson(ok, 6));
    expect(() => parseJsonBytes(Buffer.from(ok), 5, true)).toThrow(/nesting deeper than 5/);
    expect(() => parseJsonBytes(Buffer.from('{"inputs":[{"datatype":"FP32","data":[[[1],"x"]]}]}'), 5, true)).toThrow(/nesting deeper than 5/);
  });

  it('never reads past the end of the buffer it is given (the binary section follows the header)', () => {
    const body = Buffer.from('{"inputs":[{"datatype":"FP32","data":[1,2]}]}12345');
    const header = body.subarray(0, body.length - 5);
    const v = parseJsonBytes(header, 10, true) as { inputs: { data: JsonFloats }[] };
    expect([...v.inputs[0]!.data.values]).toEqual([1, 2]);
    expect(() => parseJsonBytes(body.subarray(0, body.length - 8), 10, true)).toThrow(TritonError);
    expect(() => parseJsonBytes(Buffer.from('[1,2]12').subarray(0, 4), 10)).toThrow(TritonError);
    expect(parseJsonBytes(Buffer.from('12345').subarray(0, 2), 10)).toBe(12);
  });
});

describe('float data read straight into a typed array', () => {
  const header = (dtype: string, data: string, shape = '[3]') => `{"inputs":[{"name":"A","datatype":"${dtype}","shape":${shape},"data":${data}}]}`;
  const floatsOf = (text: string) => (parseJsonBytes(Buffer.from(text), 10, true) as { inputs: { data: unknown }[] }).inputs[0]!.data;

  it('stores in a Float32Array exactly what storing JSON.parse values stores, for every kind of literal', () => {
    const all = literals();
    const data = floatsOf(header('FP32', `[${all.join(',')}]`, `[${all.length}]`));
    expect(data).toBeInstanceOf(JsonFloats);
    const values = (data as JsonFloats).values;
    expect(values).toBeInstanceOf(Float32Array);
    const expected = Float32Array.from(all.map((l) => Number(l)));
    const mismatches = all.filter((l, i) => !Object.is(values[i], expected[i]));
    expect(mismatches).toEqual([]);
  });

  it('stores in a Float64Array exactly what JSON.parse gives', () => {
    const all = literals();
    const values = (floatsOf(header('FP64', `[${all.join(',')}]`, `[${all.length}]`)) as JsonFloats).values;
    expect(values).toBeInstanceOf(Float64Array);
    const mismatches = all.filter((l, i) => !Object.is(values[i], Number(l)));
    expect(mismatches).toEqual([]);
  });

  it("reads data that follows whitespace after its ':' (as Python's json.dumps writes it) into the typed array too", () => {
    const text = '{"inputs": [{"name": "A", "datatype": "FP32", "shape": [3], "data": \n [0.5, -1.25, 3]}]}';
    const data = floatsOf(text);
    expect(data).toBeInstanceOf(JsonFloats);
    expect([...(data as JsonFloats).values]).toEqual([0.5, -1.25, 3]);
  });

  it('flattens nested data in row-major order, empty arrays included', () => {
    const data = floatsOf(header('FP32', '[[1.5, -2],[ ], [[3e0]] ]', '[3]')) as JsonFloats;
    expect([...data.values]).toEqual([1.5, -2, 3]);
    expect(data.elements()).toEqual([[1.5, -2], [], [[3]]]);
    expect(decodeJsonData('FP32', [3], data, 'x')).toEqual(Float32Array.of(1.5, -2, 3));
  });

  it('does not believe a shape that promises more elements than the text can hold', () => {
    const data = floatsOf(header('FP32', '[1,2]', '[2147483648,2147483648]')) as JsonFloats;
    expect([...data.values]).toEqual([1, 2]);
  });

  it('grows past a shape that promises fewer', () => {
    const many = Array.from({ length: 100 }, (_, i) => i / 4);
    const data = floatsOf(header('FP64', JSON.stringify(many), '[1]')) as JsonFloats;
    expect([...data.values]).toEqual(many);
  });

  it('gives the JSON.parse array to decodeJsonData for another datatype or a wrong count, with the same errors', () => {
    const text = '{"inputs":[{"datatype":"FP32","data":[1.5,2],"datatype":"INT32"}]}';
    const data = floatsOf(text) as JsonFloats;
    expect(data).toBeInstanceOf(JsonFloats);
    expect(() => decodeJsonData('INT32', [2], data, 'x')).toThrow("x: 'data' element 0 must be an integer for INT32, got 1.5");
    expect(() => decodeJsonData('FP32', [3], data, 'x')).toThrow("x: unable to parse 'data': shape [3] needs 3 elements but 'data' holds 2");
    expect(decodeJsonData('FP64', [2], data, 'x')).toEqual(Float64Array.of(1.5, 2));
  });

  it('keeps strings that hold digits and commas as strings', () => {
    const text = '{"id":"1,2,3","inputs":[{"name":"1234567890123456789","datatype":"FP32","shape":[1],"data":[7]}]}';
    const v = parseJsonBytes(Buffer.from(text), 10, true) as { id: string; inputs: { name: string; data: JsonFloats }[] };
    expect(v.id).toBe('1,2,3');
    expect(v.inputs[0]!.name).toBe('1234567890123456789');
    expect([...v.inputs[0]!.data.values]).toEqual([7]);
  });
});
