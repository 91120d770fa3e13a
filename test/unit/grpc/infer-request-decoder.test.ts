import type { MethodDefinition } from '@grpc/grpc-js';
import { TritonError } from '../../../lib/base/errors';
import { parseModelInferRequest } from '../../../lib/server/grpc/infer-codec';
import { decodeModelInferRequest } from '../../../lib/server/grpc/infer-request-decoder';
import type { ModelInferRequestMessage, ModelInferResponseMessage } from '../../../lib/protocol/messages';
import { loadProtos } from '../../../lib/protocol/protos';
import { thrownBy } from '../../helpers/caught';

const infer = loadProtos('string').inference.ModelInfer as MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;

/** A length-delimited field: tag, length, bytes. */
function field(number: number, bytes: Buffer | number[]): Buffer {
  const b = Buffer.from(bytes);
  return Buffer.concat([Buffer.from([(number << 3) | 2, b.length]), b]);
}

const errorOf = (fn: () => unknown): TritonError => thrownBy<TritonError>(fn);

describe('decodeModelInferRequest refuses malformed wire bytes as INVALID_ARGUMENT', () => {
  it.each<[string, Buffer, RegExp]>([
    ['a tag cut inside its varint', Buffer.from([0x8a]), /truncated or invalid varint/],
    ['a varint of more than ten bytes', Buffer.from([0x08, ...new Array<number>(11).fill(0xff), 0x01]), /invalid varint/],
    ['a length beyond the message', Buffer.from([0x0a, 0x05, 0x61]), /length-delimited field/],
    ['a length of 2^32 - 1', Buffer.from([0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]), /length-delimited field/],
    ['a length varint beyond 32 bits', Buffer.from([0x3a, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]), /length-delimited field/],
    ['a length of 2^32 + 3 followed by 3 bytes', Buffer.from([0x3a, 0x83, 0x80, 0x80, 0x80, 0x10, 1, 2, 3]), /length-delimited field/],
    ['an embedded message overrunning its length', Buffer.from([0x2a, 0x02, 0x0a, 0x05]), /length-delimited field/],
    ['field number 0', Buffer.from([0x00, 0x01]), /field number 0/],
    ['field number 0 inside an input', field(5, [0x02, 0x00]), /field number 0/],
    ['a start-group wire type', Buffer.from([0x0b]), /wire type 3/],
    ['an end-group wire type', Buffer.from([0x0c]), /wire type 4/],
    ['wire type 6', Buffer.from([0x0e, 0x00]), /wire type 6/],
    ['wire type 7', Buffer.from([0x0f, 0x00]), /wire type 7/],
    ['an unknown fixed64 field cut short', Buffer.from([0x41, 1, 2, 3]), /skipped field/],
    ['an unknown fixed32 field cut short', Buffer.from([0x45, 1]), /skipped field/],
    ['packed fp32_contents of 3 bytes', field(5, field(5, field(6, [0, 0, 0x80]))), /float/],
    ['packed fp64_contents of 7 bytes', field(5, field(5, field(7, [0, 0, 0, 0, 0, 0, 0]))), /double/],
    ['packed shape ending inside a varint', field(5, field(3, [0x01, 0x80])), /varint/],
    ['a parameter entry cut short', field(4, field(2, [0x21, 0, 0])), /double|length-delimited/],
  ])('%s', (_what, bytes, message) => {
    const err = errorOf(() => decodeModelInferRequest(bytes));
    expect(err).toBeInstanceOf(TritonError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/^malformed ModelInferRequest: /);
    expect(err.message).toMatch(message);
    // The handlers' entry point answers the same.
    expect(errorOf(() => parseModelInferRequest(bytes)).code).toBe('INVALID_ARGUMENT');
  });
});

describe('decodeModelInferRequest skips a known field sent with another wire type, as protobuf C++ does', () => {
  it.each<[string, Buffer, Partial<ModelInferRequestMessage>]>([
    ['model_name as a varint', Buffer.concat([Buffer.from([0x08, 0x05]), field(2, Buffer.from('3'))]), { model_name: '', model_version: '3' }],
    ['raw_input_contents as fixed32', Buffer.from([0x3d, 1, 2, 3, 4]), { raw_input_contents: [] }],
  ])('%s', (_what, bytes, expected) => {
    expect(decodeModelInferRequest(bytes)).toMatchObject(expected);
  });

  it('inside inputs and contents: a name as a varint, a shape as fixed32, bytes_contents as a varint', () => {
    const contents = Buffer.concat([Buffer.from([0x40, 0x07]), field(8, Buffer.from('ok'))]);
    const input = Buffer.concat([Buffer.from([0x08, 0x01]), field(1, Buffer.from('A')), Buffer.from([0x1d, 1, 0, 0, 0, 0x18, 0x02]), field(5, contents)]);
    const msg = decodeModelInferRequest(field(5, input));
    expect(msg.inputs[0]?.name).toBe('A');
    expect(msg.inputs[0]?.shape).toEqual([2]);
    expect(msg.inputs[0]?.contents?.bytes_contents?.map((b) => Buffer.from(b).toString())).toEqual(['ok']);
  });
});

describe('decodeModelInferRequest keeps client-chosen parameter keys as entries', () => {
  it('stores a __proto__ key as an own entry, leaving the map prototype alone', () => {
    const bytes = infer.requestSerialize({ model_name: 'm', inputs: [], parameters: { a: { string_param: 'x' } } });
    // The same entry again under the key "__proto__" (proto-loader's own encoder would not write that key).
    const key = Buffer.from('__proto__');
    const value = field(3, Buffer.from('polluted'));
    const entry = field(4, Buffer.concat([field(1, key), field(2, value)]));
    const msg = decodeModelInferRequest(Buffer.concat([bytes, entry]));
    const params = msg.parameters as Record<string, unknown>;
    expect(Object.getPrototypeOf(params)).toBe(Object.prototype);
    expect(Object.keys(params)).toEqual(['a', '__proto__']);
    expect((params.string_param as unknown) ?? undefined).toBeUndefined();
  });
});
