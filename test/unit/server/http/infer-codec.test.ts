import { constants } from 'node:buffer';
import { Cancellation } from '../../../../lib/base/cancellation';
import { TritonError } from '../../../../lib/base/errors';
import type { Model } from '../../../../lib/model/model';
import { decodeHttpInfer } from '../../../../lib/server/http/infer-codec';
import { thrownBy } from '../../../helpers/caught';

/** decodeHttpInfer reads the model's name, its inputs (raw binary requests), outputs (labels) and batch size. */
const model = {
  name: 'm',
  version: '1',
  inputs: [{ name: 'A', dtype: 'FP32', shape: [-1] }],
  outputs: [{ name: 'Y', dtype: 'FP32', shape: [-1] }],
  config: { effectiveMaxBatchSize: 8 },
} as unknown as Model;

function decode(body: string | Buffer, headerLength: number | null = null) {
  return decodeHttpInfer(typeof body === 'string' ? Buffer.from(body) : body, headerLength, model, 100, new Cancellation());
}

const errorOf = (fn: () => unknown): TritonError => thrownBy<TritonError>(fn);

/** A request with one input: its fields as JSON text, `overrides` replacing them (undefined: left out). */
function withInput(overrides: Record<string, string | undefined>): string {
  const fields: Record<string, string | undefined> = { name: '"A"', datatype: '"FP32"', shape: '[1,2]', data: '[1,2]', ...overrides };
  const text = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `"${k}":${v}`)
    .join(',');
  return `{"inputs":[{${text}}]}`;
}

const BIG = '12345678901234567890';

describe('decodeHttpInfer refuses a malformed request as INVALID_ARGUMENT, naming the field', () => {
  it.each<[string, string, RegExp]>([
    ['a datatype beyond 2^64 (item 8)', withInput({ datatype: BIG }), /input 'A' for model 'm': 'datatype' must be a string, got 12345678901234567890$/],
    ['a datatype that is an object holding a BigInt', withInput({ datatype: `{"x":${BIG}}` }), /'datatype' must be a string, got \{"x":12345678901234567890\}/],
    ['an unknown datatype', withInput({ datatype: '"FP8"' }), /unknown datatype "FP8"/],
    ['a numeric name', '{"inputs":[{"name":5,"datatype":"FP32","shape":[1],"data":[1]}]}', /input 0 must have a string 'name', got 5/],
    ['a name beyond 2^64', `{"inputs":[{"name":${BIG},"datatype":"FP32","shape":[1],"data":[1]}]}`, /input 0 must have a string 'name', got 12345678901234567890/],
    ['an input that is not an object', '{"inputs":[7]}', /input 0 must be an object, got 7/],
    ['inputs that are not an array', `{"inputs":{"a":${BIG}}}`, /'inputs' array, got \{"a":12345678901234567890\}/],
    ['a request that is not an object', '[1,2]', /must be an object, got \[1,2\]/],
    ['an id that is not a string', `{"id":${BIG},"inputs":[]}`, /'id' must be a string, got 12345678901234567890/],
    ['a shape that is a string', withInput({ shape: '"1,2"' }), /'shape' must be an array of non-negative integers, got "1,2"/],
    ['a negative dim', withInput({ shape: '[1,-2]' }), /'shape' must be an array of non-negative integers, got \[1,-2\]/],
    ['a dim beyond 2^64', withInput({ shape: `[1,${BIG}]` }), /got \[1,12345678901234567890\]/],
    ['a fractional dim', withInput({ shape: '[1,2.5]' }), /got \[1,2.5\]/],
    ['a shape that does not fit the data', withInput({ shape: '[2147483648,2147483648]' }), /needs 4611686018427388000 elements but 'data' holds 2/],
    ['a dim of 1e308', withInput({ shape: '[1e308,1e308]' }), /needs Infinity elements/],
    ['data that is not an array', withInput({ data: BIG }), /'data' must be an array, got 12345678901234567890/],
    ['a data element holding a BigInt', withInput({ data: `[{"v":${BIG}},2]` }), /'data' element 0 must be a number, got \{"v":12345678901234567890\}/],
    ['a huge string data element', withInput({ data: `["${'x'.repeat(100000)}",2]` }), /element 0 must be a number, got "x{63}\.\.\.$/],
    ['parameters that are not an object', withInput({ parameters: BIG }), /'parameters' must be an object, got 12345678901234567890/],
    ['request parameters that are an array', '{"inputs":[],"parameters":[1]}', /request 'parameters' must be an object, got \[1\]/],
    ['a priority beyond 2^64 that is negative', '{"inputs":[],"parameters":{"priority":-12345678901234567890}}', /'priority' must be a non-negative integer, got -12345678901234567890/],
    ['a custom parameter holding a BigInt in an object', `{"inputs":[],"parameters":{"p":{"x":${BIG}}}}`, /parameter 'p' has an invalid type: .* got \{"x":12345678901234567890\}/],
    ['binary_data_output that is not a boolean', `{"inputs":[],"parameters":{"binary_data_output":${BIG}}}`, /'binary_data_output' must be a boolean, got 12345678901234567890/],
    ['outputs that are not an array', `{"inputs":[],"outputs":${BIG}}`, /'outputs' must be an array, got 12345678901234567890/],
    ['an output that is not an object', '{"inputs":[],"outputs":["Y"]}', /output 0 must be an object, got "Y"/],
    ['an output name beyond 2^64', `{"inputs":[],"outputs":[{"name":${BIG}}]}`, /output 0 must have a string 'name', got 12345678901234567890/],
    ['output parameters that are not an object', '{"inputs":[],"outputs":[{"name":"Y","parameters":7}]}', /output 'Y': 'parameters' must be an object, got 7/],
    ['binary_data that is not a boolean', `{"inputs":[],"outputs":[{"name":"Y","parameters":{"binary_data":${BIG}}}]}`, /'binary_data' must be a boolean, got 12345678901234567890/],
    ['a classification object without a prototype (lossless path)', `{"x":${BIG},"inputs":[],"outputs":[{"name":"Y","parameters":{"classification":{"__proto__":null}}}]}`, /'classification' must be a non-negative integer \(the number of classes\), got \{"__proto__":null\}/],
    ['a classification beyond 2^64', `{"inputs":[],"outputs":[{"name":"Y","parameters":{"classification":${BIG}}}]}`, /'classification' must be a non-negative integer .*got 12345678901234567890/],
    ['a binary_data_size holding a BigInt in an object', withInput({ data: undefined, parameters: `{"binary_data_size":{"n":${BIG}}}` }), /'binary_data_size' must be a non-negative integer, got \{"n":12345678901234567890\}/],
    ['a binary_data_size that is an object', '{"inputs":[{"name":"A","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":{"n":1}}}]}', /'binary_data_size' must be a non-negative integer, got \{"n":1\}/],
    ['a negative binary_data_size', '{"inputs":[{"name":"A","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":-8}}]}', /'binary_data_size' must be a non-negative integer, got -8/],
    ['a binary_data_size without a header length', '{"inputs":[{"name":"A","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}}]}', /Infer-Header-Content-Length/],
    ['JSON nested deeper than the limit', `{"inputs":${'['.repeat(200)}${']'.repeat(200)}}`, /nesting deeper than 100 levels/],
    ['truncated JSON', '{"inputs":[{"name":"A"', /failed to parse the request JSON buffer/],
  ])('%s', (_what, body, message) => {
    const err = errorOf(() => decode(body));
    expect(err).toBeInstanceOf(TritonError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
  });
});

describe('decodeHttpInfer with binary data refuses sizes the body does not hold', () => {
  const header = (size: string, shape = '[1,2]', dtype = 'FP32') => `{"inputs":[{"name":"A","datatype":"${dtype}","shape":${shape},"parameters":{"binary_data_size":${size}}}]}`;
  const body = (head: string, payload: Buffer) => Buffer.concat([Buffer.from(head), payload]);
  const prefix = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    return b;
  };

  it.each<[string, Buffer, number, RegExp]>([
    ['a binary_data_size beyond the body', body(header('9'), Buffer.alloc(8)), header('9').length, /expecting 1 additional bytes/],
    ['a binary_data_size beyond 2^64', body(header(BIG), Buffer.alloc(8)), header(BIG).length, /expecting \d+ additional bytes/],
    ['bytes left over after the inputs', body(header('8'), Buffer.alloc(9)), header('8').length, /unexpected additional input data/],
    ['a header length beyond the body', body(header('8'), Buffer.alloc(8)), 10_000, /inference header size should be in range \(0, \d+\), got: 10000/],
    ['a negative header length', body(header('8'), Buffer.alloc(8)), -1, /inference header size should be in range/],
    ['a header length inside the JSON', body(header('8'), Buffer.alloc(8)), 10, /failed to parse the request JSON buffer/],
    ['a size that does not fit the shape', body(header('8', '[1,3]'), Buffer.alloc(8)), header('8', '[1,3]').length, /input byte size mismatch for input 'A' for model 'm'. Expected 12, got 8/],
    ['a shape whose byte size overflows', body(header('8', '[4503599627370496,4]'), Buffer.alloc(8)), header('8', '[4503599627370496,4]').length, /input byte size mismatch/],
    ['a BYTES length prefix beyond the data', body(header('8', '[1,1]', 'BYTES'), Buffer.concat([prefix(0xffffffff), Buffer.alloc(4)])), header('8', '[1,1]', 'BYTES').length, /BYTES element 0 declares 4294967295 bytes but only 4 remain/],
    ['a BYTES length prefix cut short', body(header('6', '[1,2]', 'BYTES'), Buffer.concat([prefix(0), Buffer.alloc(2)])), header('6', '[1,2]', 'BYTES').length, /BYTES element 1 has a truncated 4-byte length prefix/],
    ['fewer BYTES elements than the shape', body(header('4', '[1,2]', 'BYTES'), prefix(0)), header('4', '[1,2]', 'BYTES').length, /expected 2 BYTES elements for its shape, got 1/],
  ])('%s', (_what, bytes, headerLength, message) => {
    const err = errorOf(() => decode(bytes, headerLength));
    expect(err).toBeInstanceOf(TritonError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
  });

  it('refuses a JSON header longer than the longest string as PAYLOAD_TOO_LARGE (400), not a RangeError', () => {
    // Uninitialised memory: the pages are never touched, the header is refused before it is decoded.
    const huge = Buffer.allocUnsafeSlow(constants.MAX_STRING_LENGTH + 1);
    const err = errorOf(() => decode(huge));
    expect(err).toBeInstanceOf(TritonError);
    expect(err.code).toBe('PAYLOAD_TOO_LARGE');
    expect(err.httpStatus).toBe(400);
    expect(err.message).toMatch(/exceeds the \d+ characters a JSON header can hold/);
  });

  it('refuses a raw binary body (header length 0) that does not fit the input', () => {
    const err = errorOf(() => decode(Buffer.alloc(7), 0));
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/raw binary request: 7 bytes do not fit input 'A'/);
  });

  it('still decodes valid binary and JSON inputs', () => {
    const head = header('8');
    const decoded = decode(body(head, Buffer.from(Float32Array.of(1, 2).buffer)), head.length);
    expect(decoded.request.inputs[0]?.tensor.data).toEqual(Float32Array.of(1, 2));
    expect(decode(withInput({})).request.inputs[0]?.tensor.shape).toEqual([1, 2]);
  });
});

describe('decodeHttpInfer with a body that owns its memory (movableBuffer)', () => {
  /** A body whose JSON header leaves each binary input misaligned: A (FP32 ×3) then B (FP32 ×2). */
  function misaligned(): { body: Buffer; head: number } {
    const text = Buffer.from(
      '{"inputs":[{"name":"A","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":12}},' +
        '{"name":"B","datatype":"FP32","shape":[1,2],"parameters":{"binary_data_size":8}}]}',
    );
    // Spaces after the JSON leave the binary section one byte past a multiple of 4.
    const json = Buffer.concat([text, Buffer.from(' '.repeat((5 - (text.length % 4)) % 4))]);
    const memory = new ArrayBuffer(json.length + 20);
    const body = Buffer.from(memory);
    json.copy(body);
    new DataView(memory).setFloat32(json.length, 1.5, true);
    new DataView(memory).setFloat32(json.length + 4, -2, true);
    new DataView(memory).setFloat32(json.length + 8, 3.25, true);
    new DataView(memory).setFloat32(json.length + 12, 1e30, true);
    new DataView(memory).setFloat32(json.length + 16, -7.5, true);
    return { body, head: json.length };
  }
  const twoInputs = { ...model, inputs: [model.inputs[0], { name: 'B', dtype: 'FP32', shape: [-1] }] } as unknown as Model;

  it('moves misaligned binary inputs back in place: views of the body, not copies', () => {
    const { body, head } = misaligned();
    expect(head % 4).toBe(1);
    const { request } = decodeHttpInfer(body, head, twoInputs, 100, new Cancellation(), body.buffer);
    const [a, b] = request.inputs.map((i) => i.tensor.data as Float32Array);
    expect(Array.from(a!)).toEqual([1.5, -2, 3.25]);
    expect(Array.from(b!)).toEqual([Math.fround(1e30), -7.5]);
    expect(a!.buffer).toBe(body.buffer);
    expect(b!.buffer).toBe(body.buffer);
    expect(b!.byteOffset).toBeGreaterThanOrEqual(a!.byteOffset + a!.byteLength);
  });

  it('copies them out of a body it does not own, leaving the body as it was', () => {
    const { body, head } = misaligned();
    const before = Buffer.from(body);
    const { request } = decodeHttpInfer(body, head, twoInputs, 100, new Cancellation());
    expect(Array.from(request.inputs[0]!.tensor.data as Float32Array)).toEqual([1.5, -2, 3.25]);
    expect((request.inputs[0]!.tensor.data as Float32Array).buffer).not.toBe(body.buffer);
    expect(body.equals(before)).toBe(true);
  });
});
