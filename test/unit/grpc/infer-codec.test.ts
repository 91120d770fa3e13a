import type { MethodDefinition } from '@grpc/grpc-js';
import { Cancellation } from '../../../lib/base/cancellation';
import { TritonError } from '../../../lib/base/errors';
import type { Model } from '../../../lib/model/model';
import { decodeGrpcInfer, encodeGrpcInfer, grpcOutputHandling } from '../../../lib/server/grpc/infer-codec';
import { decodeModelInferRequest } from '../../../lib/server/grpc/infer-request-decoder';
import { loadProtos } from '../../../lib/protocol/protos';
import { SharedMemoryManager } from '../../../lib/server/shared-memory';
import type { ModelInferRequestMessage } from '../../../lib/protocol/messages';
import { thrownBy } from '../../helpers/caught';

/** decodeGrpcInfer reads only the model's name and version; validation against specs is the model's job. */
const model = { name: 'm', version: '3' } as unknown as Model;
const cancellation = new Cancellation();

function decode(msg: Partial<ModelInferRequestMessage>) {
  return decodeGrpcInfer({ model_name: 'm', inputs: [], ...msg }, model, cancellation);
}

const errorOf = (fn: () => unknown): TritonError => thrownBy<TritonError>(fn);

describe('decodeGrpcInfer', () => {
  it('takes raw data in order, skipping inputs that carry typed contents only when no raw data is sent', () => {
    const a = Buffer.from(Float32Array.of(1, 2).buffer);
    const b = Buffer.from(Int32Array.of(7).buffer);
    const req = decode({
      id: 'r1',
      inputs: [
        { name: 'A', datatype: 'FP32', shape: ['1', '2'] },
        { name: 'B', datatype: 'INT32', shape: [1, 1] },
      ],
      raw_input_contents: [a, b],
    });
    expect(req.id).toBe('r1');
    expect(req.modelName).toBe('m');
    expect(req.modelVersion).toBe('3');
    expect(req.inputs.map((i) => [i.name, i.tensor.dtype, i.tensor.shape])).toEqual([
      ['A', 'FP32', [1, 2]],
      ['B', 'INT32', [1, 1]],
    ]);
    expect(req.inputs[0]?.tensor.data).toEqual(Float32Array.of(1, 2));
    expect(req.cancellation).toBe(cancellation);
    expect(req.requestedOutputs).toBeUndefined();
  });

  it('views aligned raw bytes without copying', () => {
    const backing = new ArrayBuffer(16);
    const bytes = Buffer.from(backing, 8, 8);
    const req = decode({ inputs: [{ name: 'A', datatype: 'FP64', shape: [1, 1] }], raw_input_contents: [bytes] });
    expect((req.inputs[0]?.tensor.data as Float64Array).buffer).toBe(backing);
  });

  it('splits BYTES raw data on its 4-byte length prefixes, keeping NULs', () => {
    const raw = Buffer.concat([Buffer.from([3, 0, 0, 0]), Buffer.from('a\0b'), Buffer.from([0, 0, 0, 0])]);
    const req = decode({ inputs: [{ name: 'S', datatype: 'BYTES', shape: [2] }], raw_input_contents: [raw] });
    expect((req.inputs[0]?.tensor.data as Uint8Array[]).map((e) => Buffer.from(e).toString())).toEqual(['a\0b', '']);
  });

  it('reads typed contents', () => {
    const req = decode({ inputs: [{ name: 'A', datatype: 'INT64', shape: [2], contents: { int64_contents: ['9007199254740993', '-1'] } }] });
    expect(req.inputs[0]?.tensor.data).toEqual(BigInt64Array.of(9007199254740993n, -1n));
  });

  it('splits parameters into reserved and custom ones, allowing triton_enable_empty_final_response', () => {
    const req = decode({
      parameters: {
        priority: { uint64_param: '2', parameter_choice: 'uint64_param' },
        timeout: { int64_param: '1000', parameter_choice: 'int64_param' },
        triton_enable_empty_final_response: { bool_param: true, parameter_choice: 'bool_param' },
        tag: { string_param: 'x', parameter_choice: 'string_param' },
      },
    });
    expect(req.priority).toBe(2);
    expect(req.timeoutMicroseconds).toBe(1000);
    expect(req.parameters).toEqual({ tag: 'x' });
  });

  it('lists the requested outputs in order', () => {
    expect(decode({ outputs: [{ name: 'B' }, { name: 'A' }] }).requestedOutputs).toEqual(['B', 'A']);
  });

  it.each<[string, Partial<ModelInferRequestMessage>, string, RegExp]>([
    ['an unknown datatype', { inputs: [{ name: 'A', datatype: 'FP8', shape: [1] }], raw_input_contents: [Buffer.alloc(1)] }, 'INVALID_ARGUMENT', /unknown datatype "FP8"/],
    ['a negative dim', { inputs: [{ name: 'A', datatype: 'FP32', shape: ['-1'] }] }, 'INVALID_ARGUMENT', /non-negative integers/],
    ['a missing raw entry', { inputs: [{ name: 'A', datatype: 'FP32', shape: [1] }] }, 'INVALID_ARGUMENT', /unable to find data for input tensor 'A' for model 'm' in request\./],
    ['extra raw entries', { inputs: [{ name: 'A', datatype: 'FP32', shape: [1] }], raw_input_contents: [Buffer.alloc(4), Buffer.alloc(4)] }, 'INVALID_ARGUMENT', /2 raw_input_contents for 1 raw inputs/],
    [
      'contents with raw data',
      { inputs: [{ name: 'A', datatype: 'FP32', shape: [1], contents: { fp32_contents: [1] } }], raw_input_contents: [Buffer.alloc(4)] },
      'INVALID_ARGUMENT',
      /contents field must not be specified when using raw_input_contents for 'A'/,
    ],
    ['a reserved triton_ key', { parameters: { triton_x: { bool_param: true } } }, 'INVALID_ARGUMENT', /reserved for Triton usage/],
    [
      'a shared-memory input without a byte size',
      { inputs: [{ name: 'A', datatype: 'FP32', shape: [1], parameters: { shared_memory_region: { string_param: 'r' } } }] },
      'INVALID_ARGUMENT',
      /'shared_memory_byte_size' must be given with 'shared_memory_region'/,
    ],
    [
      'a shared-memory input from a region nobody registered',
      { inputs: [{ name: 'A', datatype: 'FP32', shape: [1], parameters: { shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: '4' } } }] },
      'NOT_FOUND',
      /Unable to find system shared memory region: 'r'/,
    ],
  ])('refuses %s', (_name, msg, code, message) => {
    const err = errorOf(() => decode(msg));
    expect(err).toBeInstanceOf(TritonError);
    expect(err.code).toBe(code);
    expect(err.message).toMatch(message);
  });
});

describe('encodeGrpcInfer', () => {
  it('writes one raw entry per output, in order, numeric data as views and BYTES length-prefixed', () => {
    const data = Float32Array.of(1, 2);
    const msg = encodeGrpcInfer({
      id: 'x',
      modelName: 'm',
      modelVersion: '3',
      outputs: [
        { name: 'F', tensor: { dtype: 'FP32', shape: [1, 2], data } },
        { name: 'S', tensor: { dtype: 'BYTES', shape: [1], data: [Buffer.from('hi')] } },
        { name: 'E', tensor: { dtype: 'INT8', shape: [0], data: new Int8Array(0) } },
      ],
    });
    expect(msg).toMatchObject({ id: 'x', model_name: 'm', model_version: '3' });
    expect(msg.outputs).toEqual([
      { name: 'F', datatype: 'FP32', shape: [1, 2] },
      { name: 'S', datatype: 'BYTES', shape: [1] },
      { name: 'E', datatype: 'INT8', shape: [0] },
    ]);
    expect(msg.raw_output_contents).toHaveLength(3);
    expect(msg.raw_output_contents[0]?.buffer).toBe(data.buffer);
    expect(Buffer.from(msg.raw_output_contents[1] as Uint8Array)).toEqual(Buffer.from([2, 0, 0, 0, 104, 105]));
    expect(msg.raw_output_contents[2]?.byteLength).toBe(0);
    expect(msg.parameters).toBeUndefined();
  });
});

describe('grpcOutputHandling', () => {
  const classifier = { name: 'c', version: '1', config: { effectiveMaxBatchSize: 8 }, outputs: [{ name: 'P', labels: ['cat', 'dog', 'eel'] }] } as unknown as Model;
  const shm = new SharedMemoryManager(false);
  const request = (parameters: Record<string, unknown>) => ({ model_name: 'c', inputs: [], outputs: [{ name: 'P', parameters }] }) as unknown as ModelInferRequestMessage;

  it('answers a classification output as its top classes with labels, BYTES [rows, count]', () => {
    const handling = grpcOutputHandling(request({ classification: { int64_param: '2' } }), classifier, shm);
    const msg = encodeGrpcInfer(
      { id: '', modelName: 'c', modelVersion: '1', outputs: [{ name: 'P', tensor: { dtype: 'FP32', shape: [2, 3], data: Float32Array.of(0.1, 0.7, 0.2, 0.5, 0.25, 0.25) } }] },
      undefined,
      handling,
    );
    expect(msg.outputs).toEqual([{ name: 'P', datatype: 'BYTES', shape: [2, 2] }]);
    const raw = Buffer.from(msg.raw_output_contents[0] as Uint8Array);
    const strings: string[] = [];
    for (let pos = 0; pos < raw.length; ) {
      const n = raw.readUInt32LE(pos);
      strings.push(raw.toString('utf8', pos + 4, pos + 4 + n));
      pos += 4 + n;
    }
    expect(strings).toEqual(['0.700000:1:dog', '0.200000:2:eel', '0.500000:0:cat', '0.250000:1:dog']);
  });

  it('has nothing to do for plain outputs, and refuses classification with shared memory', () => {
    expect(grpcOutputHandling(request({}), classifier, shm)).toBeUndefined();
    expect(grpcOutputHandling(request({ classification: { int64_param: '0' } }), classifier, shm)).toBeUndefined();
    const both = { classification: { int64_param: '1' }, shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: '8' } };
    expect(errorOf(() => grpcOutputHandling(request(both), classifier, shm)).message).toMatch(/'classification' cannot be combined with 'shared_memory_region'/);
    expect(errorOf(() => grpcOutputHandling(request({ classification: { int64_param: '-1' } }), classifier, shm)).message).toMatch(/must be a non-negative integer/);
  });
});

describe('decodeGrpcInfer: misaligned raw inputs', () => {
  const infer = loadProtos('string').inference.ModelInfer as MethodDefinition<ModelInferRequestMessage, unknown>;

  /**
   * A received message as grpc-js hands it over: the 5-byte frame header and the message in a buffer of their
   * own, the message padded with a model name of `pad` characters so that the raw entries land misaligned.
   */
  function received(pad: number, inputs: { name: string; datatype: string; data: ArrayBufferView }[]): Buffer {
    const message = infer.requestSerialize({
      model_name: 'm'.repeat(pad),
      inputs: inputs.map((i) => ({ name: i.name, datatype: i.datatype, shape: [i.data.byteLength / (i.data as Float32Array).BYTES_PER_ELEMENT] })),
      raw_input_contents: inputs.map((i) => Buffer.from(i.data.buffer, i.data.byteOffset, i.data.byteLength)),
    } as ModelInferRequestMessage);
    // Large enough to have an ArrayBuffer of its own, as a message of 64 KiB or more does.
    const framed = Buffer.alloc(5 + message.length);
    message.copy(framed, 5);
    return framed.subarray(5);
  }

  const floats = (n: number, from: number) => Float32Array.from({ length: n }, (_, i) => from + i * 0.5);

  it('moves a misaligned FP32 input back in place, in the buffer the message owns, with its values intact', () => {
    const a = floats(20_000, 1);
    for (let pad = 1; pad <= 4; pad++) {
      const bytes = received(pad, [{ name: 'A', datatype: 'FP32', data: a }]);
      const msg = decodeModelInferRequest(bytes);
      expect(msg.movableBuffer).toBe(bytes.buffer);
      const data = decodeGrpcInfer(msg, model, cancellation).inputs[0]?.tensor.data as Float32Array;
      expect(data).toEqual(a);
      expect(data.buffer).toBe(bytes.buffer);
    }
  });

  it('moves consecutive entries, each into the room the one before it left, and copies only what cannot move', () => {
    const a = floats(9_000, 3);
    const b = floats(9_000, -7);
    const c = Float64Array.from({ length: 5_000 }, (_, i) => i / 3);
    for (let pad = 1; pad <= 8; pad++) {
      const bytes = received(pad, [
        { name: 'A', datatype: 'FP32', data: a },
        { name: 'B', datatype: 'FP32', data: b },
        { name: 'C', datatype: 'FP64', data: c },
      ]);
      const inputs = decodeGrpcInfer(decodeModelInferRequest(bytes), model, cancellation).inputs;
      expect(inputs.map((i) => i.tensor.data)).toEqual([a, b, c]);
      for (const i of inputs) expect((i.tensor.data as Float32Array).byteOffset % (i.tensor.data as Float32Array).BYTES_PER_ELEMENT).toBe(0);
      // Each FP32 entry has at least its tag and length bytes in front to move over.
      expect((inputs[0]?.tensor.data as Float32Array).buffer).toBe(bytes.buffer);
      expect((inputs[1]?.tensor.data as Float32Array).buffer).toBe(bytes.buffer);
    }
  });

  it('copies a misaligned entry of a message that does not own its buffer, leaving that buffer as it was', () => {
    const a = floats(100, 1);
    const bytes = received(1, [{ name: 'A', datatype: 'FP32', data: a }]);
    const msg = decodeModelInferRequest(bytes);
    delete msg.movableBuffer;
    const before = Buffer.from(bytes);
    const data = decodeGrpcInfer(msg, model, cancellation).inputs[0]?.tensor.data as Float32Array;
    expect(data).toEqual(a);
    expect(data.buffer).not.toBe(bytes.buffer);
    expect(bytes.equals(before)).toBe(true);
  });
});
