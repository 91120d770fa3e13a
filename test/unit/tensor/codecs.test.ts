import { DATA_TYPES, DTYPES, NUMERIC_ARRAYS, fromOnnxEnum, type DataType } from '../../../lib/tensor/dtype';
import { decodeBinary, encodeBinary, decodeBytesElements, encodeBytesElements } from '../../../lib/tensor/binary-codec';
import { decodeJsonData, encodeJsonData, encodeJsonDataBytes } from '../../../lib/tensor/json-codec';
import { parseJson } from '../../../lib/tensor/lossless-json';
import { concatBatch, sliceBatch, tensor } from '../../../lib/tensor/tensor';
import { TritonError } from '../../../lib/base/errors';

describe('dtype table', () => {
  it('covers every KServe datatype with its config enum', () => {
    expect(DATA_TYPES).toEqual(['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES', 'BF16']);
    expect(DTYPES.BYTES.configType).toBe('TYPE_STRING');
    expect(DTYPES.FP32.configEnum).toBe(11);
    expect(DTYPES.BF16.configEnum).toBe(14);
    for (const d of DATA_TYPES) {
      if (d === 'BYTES') continue;
      const row = DTYPES[d];
      expect(row.array?.BYTES_PER_ELEMENT).toBe(row.size);
    }
  });

  it.each([
    [1, 'FP32'], [2, 'UINT8'], [3, 'INT8'], [4, 'UINT16'], [5, 'INT16'], [6, 'INT32'], [7, 'INT64'],
    [8, 'BYTES'], [9, 'BOOL'], [10, 'FP16'], [11, 'FP64'], [12, 'UINT32'], [13, 'UINT64'], [16, 'BF16'],
  ] as const)('maps ONNX element type %i to %s', (onnxEnum, dtype) => {
    expect(fromOnnxEnum(onnxEnum)).toBe(dtype);
    expect(DTYPES[dtype].onnxEnum).toBe(onnxEnum);
  });

  it('has no KServe datatype for ONNX types it lacks (complex64, float8)', () => {
    expect(fromOnnxEnum(14)).toBeUndefined();
    expect(fromOnnxEnum(17)).toBeUndefined();
    expect(fromOnnxEnum(0)).toBeUndefined();
  });

  it('lists each typed-array constructor once', () => {
    expect(NUMERIC_ARRAYS).toHaveLength(10);
    expect(new Set(NUMERIC_ARRAYS).size).toBe(NUMERIC_ARRAYS.length);
  });
});

const samples: [DataType, unknown[]][] = [
  ['BOOL', [true, false, true]],
  ['UINT8', [0, 255, 7]],
  ['UINT16', [0, 65535, 9]],
  ['UINT32', [0, 4294967295, 1]],
  ['UINT64', [0n, 18446744073709551615n, 9007199254740993n]],
  ['INT8', [-128, 127, 0]],
  ['INT16', [-32768, 32767, 3]],
  ['INT32', [-2147483648, 2147483647, 5]],
  ['INT64', [-9223372036854775808n, 9223372036854775807n, 9007199254740993n]],
  ['FP32', [1.5, -2.25, 0]],
  ['FP64', [0.1, -1e300, 3]],
  ['BYTES', ['a\u0000b', '', 'héllo']],
];

describe.each(samples)('%s codecs', (dtype, values) => {
  it('decodes JSON data and encodes it back exactly, flat', () => {
    const data = decodeJsonData(dtype, [3], values, 'input X');
    const text = encodeJsonData({ dtype, shape: [3], data });
    const back = parseJson(text, 10) as unknown[];
    expect(back.map((v) => (typeof v === 'bigint' ? v : v))).toEqual(values.map((v) => (typeof v === 'bigint' && v >= -(2n ** 53n) && v <= 2n ** 53n ? Number(v) : v)));
  });

  it('round-trips through the binary wire form', () => {
    const data = decodeJsonData(dtype, [3], values, 'input X');
    const wire = encodeBinary({ dtype, shape: [3], data });
    const copy = Buffer.concat([Buffer.from([9]), Buffer.from(wire)]).subarray(1); // misaligned on purpose
    const back = decodeBinary(dtype, [3], copy, 'input X');
    expect(encodeJsonData({ dtype, shape: [3], data: back })).toBe(encodeJsonData({ dtype, shape: [3], data }));
  });

  it('writes the same JSON text as bytes, over several chunks too', () => {
    const small = decodeJsonData(dtype, [3], values, 'input X');
    expect(encodeJsonDataBytes({ dtype, shape: [3], data: small }).toString('utf8')).toBe(encodeJsonData({ dtype, shape: [3], data: small }));
    const many = Array.from({ length: 2500 }, (_, i) => values[i % values.length]);
    const large = decodeJsonData(dtype, [2500], many, 'input X');
    expect(encodeJsonDataBytes({ dtype, shape: [2500], data: large }).toString('utf8')).toBe(encodeJsonData({ dtype, shape: [2500], data: large }));
  });

  it('accepts nested JSON data', () => {
    const nested = [[values[0]], [values[1], values[2]]];
    expect(decodeJsonData(dtype, [3], nested, 'x').length).toBe(3);
  });
});

describe('JSON codec errors', () => {
  it.each([
    ['FP16', [1, 2], /FP16 data via JSON is not supported/],
    ['BF16', [1, 2], /BF16 data via JSON is not supported/],
    ['INT32', [1.5, 2], /element 0 must be an integer/],
    ['UINT8', [256, 2], /element 0 must be an integer in \[0, 255\]/],
    ['BOOL', [1, 0], /element 0 must be a boolean/],
    ['BYTES', [1, 'a'], /element 0 must be a string/],
    ['FP32', [1], /needs 2 elements but 'data' holds 1/],
  ] as const)('%s %j is rejected', (dtype, data, message) => {
    expect(() => decodeJsonData(dtype, [2], data, 'input X')).toThrow(message);
  });
});

describe('JSON text of float data', () => {
  it('writes FP32 values as the fewest digits that read back to the float32 (as numpy prints them), -0 as -0.0 and non-finite values as null, as bytes too', () => {
    const data = Float32Array.of(0.1, -0, Infinity, NaN, 1.5, -3.4028234663852886e38, 1e-45, 123456789, 1e-7, 0.000123, 1e21, 2 / 3);
    const text = '[0.1,-0.0,null,null,1.5,-3.4028235e+38,1e-45,123456790,1e-7,0.000123,1e+21,0.6666667]';
    expect(encodeJsonData({ dtype: 'FP32', shape: [data.length], data })).toBe(text);
    expect(encodeJsonDataBytes({ dtype: 'FP32', shape: [data.length], data }).toString('latin1')).toBe(text);
  });

  it('writes FP64 values as the shortest text of the double', () => {
    const data = Float64Array.of(0.1, -0, NaN, 1.401298464324817e-45, 2 / 3);
    const text = '[0.1,-0.0,null,1.401298464324817e-45,0.6666666666666666]';
    expect(encodeJsonData({ dtype: 'FP64', shape: [data.length], data })).toBe(text);
    expect(encodeJsonDataBytes({ dtype: 'FP64', shape: [data.length], data }).toString('latin1')).toBe(text);
    expect(encodeJsonDataBytes({ dtype: 'FP64', shape: [0], data: new Float64Array(0) }).toString('latin1')).toBe('[]');
  });

  it('writes every float32 so that reading it as a double and storing it as a float32 gives it back, in no more digits than the fewest that do', () => {
    // Random bit patterns cover every exponent, subnormals included; the fewest digits are found by trying each precision.
    const bits = new Uint32Array(200_000);
    let seed = 12345;
    for (let i = 0; i < bits.length; i++) bits[i] = seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    const values = new Float32Array(bits.buffer);
    const texts = (JSON.parse(encodeJsonDataBytes({ dtype: 'FP32', shape: [values.length], data: values }).toString('latin1')) as (number | null)[]);
    const wrong: string[] = [];
    values.forEach((x, i) => {
      const back = texts[i];
      if (!Number.isFinite(x)) {
        if (back !== null) wrong.push(`${x} -> ${back}`);
        return;
      }
      if (!Object.is(Math.fround(back as number), x)) wrong.push(`${x} -> ${back}`);
      const fewest = [1, 2, 3, 4, 5, 6, 7, 8, 9].find((p) => Object.is(Math.fround(Number(x.toPrecision(p))), x))!;
      const digits = String(Math.abs(back as number)).split('e')[0]!.replace('.', '').replace(/^0+/, '').replace(/0+$/, '').length || 1;
      if (digits > fewest) wrong.push(`${x} -> ${back}: ${digits} digits, ${fewest} would do`);
    });
    expect(wrong.slice(0, 10)).toEqual([]);
  });
});

describe('binary codec', () => {
  it('keeps embedded NULs in BYTES elements', () => {
    const elements = [Buffer.from([0, 1, 0]), Buffer.alloc(0), Buffer.from('x')];
    const wire = encodeBytesElements(elements);
    expect(wire.length).toBe(3 * 4 + 4);
    const back = decodeBytesElements(wire, 3, 'x');
    expect(back.map((e) => [...e])).toEqual([[0, 1, 0], [], [120]]);
  });

  it('rejects truncated BYTES and wrong sizes', () => {
    expect(() => decodeBytesElements(Buffer.from([5, 0, 0, 0, 1]), 1, 'x')).toThrow(/declares 5 bytes/);
    expect(() => decodeBytesElements(Buffer.from([1, 0]), 1, 'x')).toThrow(/truncated/);
    expect(() => decodeBinary('FP32', [2], Buffer.alloc(7), "input 'a'")).toThrow(/Expected 8, got 7/);
  });

  it('views aligned numeric data without copying', () => {
    const buf = Buffer.from(new Float32Array([1, 2]).buffer);
    const data = decodeBinary('FP32', [2], buf, 'x');
    expect(data.buffer).toBe(buf.buffer);
  });
});

describe('parseJson', () => {
  it('keeps integers beyond 2^53 exact and others as numbers', () => {
    const v = parseJson('{"a":[9007199254740993,-9223372036854775808,1,2.5e3],"s":"12345678901234567890"}', 10) as {
      a: unknown[];
      s: string;
    };
    expect(v.a).toEqual([9007199254740993n, -9223372036854775808n, 1, 2500]);
    expect(v.s).toBe('12345678901234567890');
  });

  it('enforces the nesting limit on both paths', () => {
    const deep = `${'['.repeat(11)}${']'.repeat(11)}`;
    expect(() => parseJson(deep, 10)).toThrow(/nesting deeper than 10/);
    expect(() => parseJson(`${'['.repeat(11)}1234567890123456789${']'.repeat(11)}`, 10)).toThrow(/nesting deeper than 10/);
    expect(parseJson(`${'['.repeat(10)}${']'.repeat(10)}`, 10)).toBeDefined();
  });

  it('reports malformed JSON as INVALID_ARGUMENT', () => {
    for (const bad of ['{"a":', '{"a":12345678901234567890', 'nope']) {
      try {
        parseJson(bad, 10);
        throw new Error('expected a failure');
      } catch (err) {
        expect(err).toBeInstanceOf(TritonError);
        expect((err as TritonError).code).toBe('INVALID_ARGUMENT');
      }
    }
  });
});

describe('batch helpers', () => {
  it('concatenates along dim 0 and slices back as views', () => {
    const a = tensor('INT32', [1, 2], new Int32Array([1, 2]));
    const b = tensor('INT32', [2, 2], new Int32Array([3, 4, 5, 6]));
    const all = concatBatch([a, b]);
    expect(all.shape).toEqual([3, 2]);
    expect([...all.data]).toEqual([1, 2, 3, 4, 5, 6]);
    const tail = sliceBatch(all, 1, 3);
    expect(tail.shape).toEqual([2, 2]);
    expect([...tail.data]).toEqual([3, 4, 5, 6]);
    expect(tail.data.buffer).toBe(all.data.buffer);
  });

  it('tensor() checks the container and the element count', () => {
    expect(() => tensor('FP32', [2], new Int32Array(2) as unknown as Float32Array)).toThrow(/expects Float32Array, got Int32Array/);
    expect(() => tensor('FP32', [3], new Float32Array(2))).toThrow(/needs 3 elements, got 2/);
    expect(tensor('BYTES', [2], ['a', 'b']).data[1]).toEqual(Buffer.from('b'));
  });
});

describe('concatBatch over adjacent parts', () => {
  it('returns a view when the parts lie back to back in one buffer, and copies otherwise', () => {
    const buffer = new Float32Array([1, 2, 3, 4, 5, 6]);
    const a = tensor('FP32', [1, 2], buffer.subarray(0, 2));
    const b = tensor('FP32', [2, 2], buffer.subarray(2, 6));
    const joined = concatBatch([a, b]);
    expect(joined.data.buffer).toBe(buffer.buffer);
    expect([...joined.data]).toEqual([1, 2, 3, 4, 5, 6]);
    const apart = concatBatch([b, a]);
    expect(apart.data.buffer).not.toBe(buffer.buffer);
    expect([...apart.data]).toEqual([3, 4, 5, 6, 1, 2]);
  });
});

describe('parseJson fast path', () => {
  it('keeps floats with long fractions as numbers and long integers exact', () => {
    const floats = '{"a":[0.84147098480789650,-1.2345678901234567e-5,3]}';
    expect(parseJson(floats, 10)).toEqual(JSON.parse(floats));
    expect(parseJson('[-9223372036854775808,12345678901234567.5]', 10)).toEqual([-9223372036854775808n, JSON.parse('12345678901234567.5')]);
  });
});

describe('malformed values from a client', () => {
  it.each<[string, unknown, RegExp]>([
    ['an object holding a BigInt', [{ v: 12345678901234567890n }, 1], /element 0 must be a number, got \{"v":12345678901234567890\}/],
    ['an object without a prototype', [Object.create(null) as object, 1], /element 0 must be a number, got \{\}/],
    ['a megabyte string', ['x'.repeat(1 << 20), 1], /element 0 must be a number, got "x{63}\.\.\.$/],
  ])('a JSON data element that is %s is INVALID_ARGUMENT', (_what, data, message) => {
    let err: unknown;
    try {
      decodeJsonData('FP32', [2], data, 'input X');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TritonError);
    expect((err as TritonError).code).toBe('INVALID_ARGUMENT');
    expect((err as TritonError).message).toMatch(message);
  });

  it('parseJson refuses nesting deeper than the stack as INVALID_ARGUMENT on both paths, whatever the configured limit', () => {
    const deep = (inner: string) => `${'['.repeat(200_000)}${inner}${']'.repeat(200_000)}`;
    for (const [text, limit] of [[deep('12345678901234567890'), 1e7], [deep('1'), 150_000]] as const) {
      let err: unknown;
      try {
        parseJson(text, limit);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(TritonError);
      expect((err as TritonError).code).toBe('INVALID_ARGUMENT');
      expect((err as TritonError).message).toMatch(/nesting (too deep to parse|deeper than)/);
    }
  });

  it('parseJson keeps a __proto__ key as an own entry on both paths, as JSON.parse does', () => {
    for (const text of ['{"__proto__":{"x":1},"a":1}', '{"__proto__":{"x":1},"a":12345678901234567890}']) {
      const v = parseJson(text, 10) as Record<string, unknown>;
      expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
      expect(Object.keys(v)).toEqual(['__proto__', 'a']);
      expect((v as { x?: number }).x).toBeUndefined();
    }
  });
});
