import type { MethodDefinition } from '@grpc/grpc-js';
import { decodeModelInferRequest } from '../../../lib/server/grpc/infer-request-decoder';
import { encodeFramedModelInferResponse, encodeModelInferResponse, encodeModelStreamInferResponse } from '../../../lib/server/grpc/infer-response-encoder';
import type { InferParameterMap, Int64, ModelInferRequestMessage, ModelInferResponseMessage, ModelStreamInferResponseMessage } from '../../../lib/protocol/messages';
import { loadProtos } from '../../../lib/protocol/protos';

// The direct codecs are checked against proto-loader's (protobufjs) on the same .proto files.
const inference = loadProtos('string').inference;
const infer = inference.ModelInfer as MethodDefinition<ModelInferRequestMessage, ModelInferResponseMessage>;
const stream = inference.ModelStreamInfer as MethodDefinition<ModelInferRequestMessage, ModelStreamInferResponseMessage>;

/** A small deterministic PRNG (mulberry32), so failures reproduce. */
function rng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INT64_EDGES = ['0', '1', '-1', '127', '128', '9007199254740991', '9007199254740992', '-9007199254740991', '-9007199254740992', '9223372036854775807', '-9223372036854775808'];
const UINT64_EDGES = ['0', '1', '4294967295', '4294967296', '9007199254740993', '18446744073709551615'];

function randomParams(r: () => number): InferParameterMap {
  const out: InferParameterMap = {};
  const n = Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    const k = ['bool', 'int64', 'string', 'double', 'uint64'][Math.floor(r() * 5)];
    const key = `k${i}${r() < 0.2 ? 'é' : ''}`;
    if (k === 'bool') out[key] = { bool_param: r() < 0.5 };
    else if (k === 'int64') out[key] = { int64_param: INT64_EDGES[Math.floor(r() * INT64_EDGES.length)] as string };
    else if (k === 'string') out[key] = { string_param: r() < 0.3 ? '' : `v${Math.floor(r() * 1e6)}\u00fc` };
    else if (k === 'double') out[key] = { double_param: r() < 0.3 ? 0 : (r() - 0.5) * 1e9 };
    else out[key] = { uint64_param: UINT64_EDGES[Math.floor(r() * UINT64_EDGES.length)] as string };
  }
  return out;
}

function randomRequest(seed: number): ModelInferRequestMessage {
  const r = rng(seed);
  const inputs = Array.from({ length: Math.floor(r() * 4) }, (_, i) => {
    const shape = Array.from({ length: Math.floor(r() * 4) }, () => Math.floor(r() * 300));
    const withContents = r() < 0.3;
    return {
      name: `INPUT${i}`,
      datatype: ['FP32', 'INT64', 'BYTES', 'BOOL'][Math.floor(r() * 4)] as string,
      shape,
      parameters: randomParams(r),
      contents: withContents
        ? {
            bool_contents: [true, false].slice(0, Math.floor(r() * 3)),
            int_contents: [-(2 ** 31), 5, 2 ** 31 - 1].slice(0, Math.floor(r() * 4)),
            int64_contents: INT64_EDGES.slice(0, Math.floor(r() * INT64_EDGES.length)),
            uint_contents: [0, 4294967295].slice(0, Math.floor(r() * 3)),
            uint64_contents: UINT64_EDGES.slice(0, Math.floor(r() * UINT64_EDGES.length)),
            fp32_contents: [1.5, -0.25, 3e38].slice(0, Math.floor(r() * 4)),
            fp64_contents: [Math.PI, -1e300, 5e-324].slice(0, Math.floor(r() * 4)),
            bytes_contents: [Buffer.from('a\0b'), Buffer.alloc(0)].slice(0, Math.floor(r() * 3)),
          }
        : null,
    };
  });
  return {
    model_name: r() < 0.1 ? '' : `model_${seed}`,
    model_version: r() < 0.5 ? '' : String(Math.floor(r() * 10)),
    id: r() < 0.5 ? '' : `id-${seed}-\u65e5`,
    parameters: randomParams(r),
    inputs,
    outputs: Array.from({ length: Math.floor(r() * 3) }, (_, i) => ({ name: `OUT${i}`, parameters: randomParams(r) })),
    raw_input_contents: Array.from({ length: Math.floor(r() * 4) }, (_, i) => Buffer.from(Array.from({ length: i * 37 }, () => Math.floor(r() * 256)))),
  };
}

/** Both decoders' output in one comparable form: 64-bit integers as strings, bytes as arrays. */
function normalize(v: unknown): unknown {
  if (typeof v === 'number' && Number.isInteger(v)) return String(v);
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return [...v];
  if (Array.isArray(v)) return v.map(normalize);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalize(x)]));
  return v;
}

describe('decodeModelInferRequest', () => {
  it.each(Array.from({ length: 200 }, (_, i) => i))('decodes random request %i as proto-loader does', (seed) => {
    const bytes = infer.requestSerialize(randomRequest(seed));
    expect(normalize(decodeModelInferRequest(bytes))).toEqual(normalize(infer.requestDeserialize(bytes)));
  });

  it('returns exact numbers for safe 64-bit values and strings beyond', () => {
    const bytes = infer.requestSerialize({
      model_name: 'm',
      inputs: [{ name: 'A', datatype: 'INT64', shape: [1, 9007199254740991], contents: { int64_contents: ['-9007199254740992', '-3'] } }],
      parameters: { p: { int64_param: '-9223372036854775808' }, q: { uint64_param: '18446744073709551615' } },
    });
    const msg = decodeModelInferRequest(bytes);
    expect(msg.inputs[0]?.shape).toEqual([1, 9007199254740991]);
    expect(msg.inputs[0]?.contents?.int64_contents).toEqual(['-9007199254740992', -3]);
    expect(msg.parameters).toEqual({
      p: { int64_param: '-9223372036854775808', parameter_choice: 'int64_param' },
      q: { uint64_param: '18446744073709551615', parameter_choice: 'uint64_param' },
    });
  });

  it('views raw_input_contents in the received buffer', () => {
    const bytes = infer.requestSerialize({ model_name: 'm', inputs: [], raw_input_contents: [Buffer.from([1, 2, 3])] });
    const raw = decodeModelInferRequest(bytes).raw_input_contents?.[0] as Buffer;
    expect(raw.buffer).toBe(bytes.buffer);
    expect([...raw]).toEqual([1, 2, 3]);
  });

  it('reads unpacked repeated scalars and skips unknown fields', () => {
    // inputs { name: "A" shape: 2 (unpacked) shape: 3 (unpacked) 15: 7 (unknown varint) } 99: "x" (unknown)
    const input = Buffer.from([0x0a, 0x01, 0x41, 0x18, 0x02, 0x18, 0x03, 0x78, 0x07]);
    const bytes = Buffer.concat([Buffer.from([0x2a, input.length]), input, Buffer.from([0x9a, 0x06, 0x01, 0x78])]);
    const msg = decodeModelInferRequest(bytes);
    expect(msg.inputs).toEqual([{ name: 'A', datatype: '', shape: [2, 3], parameters: {}, contents: null }]);
  });

  it.each([
    ['a truncated length', Buffer.from([0x0a, 0x05, 0x61])],
    ['a truncated varint', Buffer.from([0x08, 0xff])],
    ['an embedded message overrunning its length', Buffer.from([0x2a, 0x02, 0x0a, 0x05])],
    ['a group wire type', Buffer.from([0x0b])],
  ])('refuses %s', (_what, bytes) => {
    expect(() => decodeModelInferRequest(bytes)).toThrow(/malformed ModelInferRequest/);
  });
});

function randomResponse(seed: number): ModelInferResponseMessage {
  const r = rng(seed + 1000);
  const n = Math.floor(r() * 4);
  return {
    model_name: r() < 0.1 ? '' : `model_${seed}`,
    model_version: String(Math.floor(r() * 10)),
    id: r() < 0.5 ? '' : `id-${seed}-\u00e9`,
    parameters: randomParams(r),
    outputs: Array.from({ length: n }, (_, i) => ({
      name: `OUT${i}`,
      datatype: 'FP32',
      shape: Array.from({ length: Math.floor(r() * 4) }, () => Math.floor(r() * 100000)) as Int64[],
      parameters: r() < 0.5 ? undefined : randomParams(r),
    })),
    // Empty entries included: every output keeps its index.
    raw_output_contents: Array.from({ length: n }, (_, i) => new Uint8Array(i === 0 ? 0 : Math.floor(r() * 300)).map(() => Math.floor(r() * 256))),
  };
}

/** A response as proto-loader decodes it when written with proto-loader's defaults. */
function expected(msg: ModelInferResponseMessage): unknown {
  return normalize(infer.responseDeserialize(infer.responseSerialize(msg)));
}

describe('encodeModelInferResponse', () => {
  it.each(Array.from({ length: 200 }, (_, i) => i))('encodes random response %i so that proto-loader reads it back', (seed) => {
    const msg = randomResponse(seed);
    expect(normalize(infer.responseDeserialize(encodeModelInferResponse(msg)))).toEqual(expected(msg));
  });

  it('writes 64-bit shapes beyond 2^53 and negative ones exactly', () => {
    const msg: ModelInferResponseMessage = {
      model_name: 'm',
      model_version: '1',
      id: '',
      outputs: [{ name: 'O', datatype: 'INT64', shape: ['9223372036854775807', -1, 0] }],
      raw_output_contents: [new Uint8Array(0)],
    };
    const back = infer.responseDeserialize(encodeModelInferResponse(msg));
    expect(back.outputs[0]?.shape).toEqual(['9223372036854775807', '-1', '0']);
    expect(back.raw_output_contents).toHaveLength(1);
  });
});

describe('encodeFramedModelInferResponse', () => {
  it.each(Array.from({ length: 50 }, (_, i) => i))('frames random response %i as the gRPC message encodeModelInferResponse gives', (seed) => {
    const msg = randomResponse(seed);
    const { pieces, messageLength } = encodeFramedModelInferResponse(msg);
    const message = encodeModelInferResponse(msg);
    expect(messageLength).toBe(message.length);
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(message.length, 1);
    expect(Buffer.concat(pieces)).toEqual(Buffer.concat([prefix, message]));
  });

  it('writes large raw outputs as pieces of their own, the tensor bytes themselves, and copies small ones', () => {
    const large = new Uint8Array(new Float32Array(40_000).fill(1.5).buffer);
    const small = Uint8Array.of(1, 2, 3, 4);
    const msg: ModelInferResponseMessage = {
      model_name: 'm',
      model_version: '1',
      id: 'r',
      outputs: [
        { name: 'A', datatype: 'FP32', shape: [40_000] },
        { name: 'B', datatype: 'UINT8', shape: [4] },
        { name: 'C', datatype: 'FP32', shape: [40_000] },
      ],
      raw_output_contents: [large, small, large],
    };
    const { pieces } = encodeFramedModelInferResponse(msg);
    expect(pieces).toHaveLength(5);
    expect(pieces[1]).toBe(large);
    expect(pieces[3]).toBe(large);
    const back = infer.responseDeserialize(Buffer.concat(pieces).subarray(5));
    expect(back.raw_output_contents.map((r) => Buffer.from(r))).toEqual([Buffer.from(large), Buffer.from(small), Buffer.from(large)]);
  });
});

describe('encodeModelStreamInferResponse', () => {
  it.each(Array.from({ length: 50 }, (_, i) => i))('encodes random stream response %i', (seed) => {
    const msg: ModelStreamInferResponseMessage = {
      error_message: seed % 3 === 0 ? `failed ${seed} \u00e9` : '',
      infer_response: seed % 5 === 0 ? null : { ...randomResponse(seed), parameters: { triton_final_response: { bool_param: true } } },
    };
    const back = normalize(stream.responseDeserialize(encodeModelStreamInferResponse(msg)));
    expect(back).toEqual(normalize(stream.responseDeserialize(stream.responseSerialize(msg))));
  });
});
