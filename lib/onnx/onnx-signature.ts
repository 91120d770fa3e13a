import * as fs from 'node:fs';
import * as protobuf from 'protobufjs';
import { TritonError } from '../base/errors';
import { fromOnnxEnum, type DataType } from '../tensor/dtype';

/**
 * The few ONNX messages needed to read a model's signature without loading it: the graph's inputs,
 * outputs and initializers, and each value's element type and shape. Field numbers follow onnx.proto.
 */
const ONNX_SUBSET = protobuf.Root.fromJSON({
  nested: {
    onnx: {
      nested: {
        ModelProto: { fields: { graph: { type: 'GraphProto', id: 7 } } },
        GraphProto: {
          fields: {
            initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
            input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
            output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
          },
        },
        TensorProto: { fields: { name: { type: 'string', id: 8 } } },
        ValueInfoProto: { fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } } },
        TypeProto: {
          oneofs: { value: { oneof: ['tensorType'] } },
          fields: { tensorType: { type: 'TensorTypeProto', id: 1 } },
        },
        TensorTypeProto: { fields: { elemType: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } } },
        TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } } },
        Dimension: {
          oneofs: { value: { oneof: ['dimValue', 'dimParam'] } },
          fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } },
        },
      },
    },
  },
});
const ModelProto = ONNX_SUBSET.lookupType('onnx.ModelProto');

/** One input or output as the model declares it: symbolic or unknown dims are -1. */
export interface OnnxTensorSignature {
  name: string;
  dtype: DataType;
  dims: number[];
  /** Whether each dim was symbolic (a name like `batch`) or unknown. */
  symbolic: boolean[];
}

/** A model's inputs and outputs. */
export interface OnnxSignature {
  inputs: OnnxTensorSignature[];
  outputs: OnnxTensorSignature[];
}

interface DecodedValueInfo {
  name?: string;
  type?: { tensorType?: { elemType?: number; shape?: { dim?: { dimValue?: number | { toNumber(): number }; dimParam?: string }[] } } };
}

/** Reads the signature of an ONNX file (or bytes) without creating a session. */
export function readOnnxSignature(source: string | Uint8Array): OnnxSignature {
  let bytes: Uint8Array;
  try {
    bytes = typeof source === 'string' ? fs.readFileSync(source) : source;
  } catch (err) {
    throw new TritonError('INVALID_CONFIG', `cannot read ONNX model ${String(source)}: ${(err as Error).message}`);
  }
  let graph: { input?: DecodedValueInfo[]; output?: DecodedValueInfo[]; initializer?: { name?: string }[] } | undefined;
  try {
    graph = (ModelProto.decode(bytes) as unknown as { graph?: typeof graph }).graph;
  } catch (err) {
    throw new TritonError('INVALID_CONFIG', `not an ONNX model (${typeof source === 'string' ? source : 'bytes'}): ${(err as Error).message}`);
  }
  if (!graph) throw new TritonError('INVALID_CONFIG', `ONNX model ${typeof source === 'string' ? source : ''} has no graph`);
  // Older exporters list initializers among the inputs; they are weights, not inputs.
  const weights = new Set((graph.initializer ?? []).map((t) => t.name));
  const convert = (v: DecodedValueInfo, kind: string): OnnxTensorSignature => {
    const name = v.name ?? '';
    const t = v.type?.tensorType;
    if (!t) throw new TritonError('INVALID_CONFIG', `ONNX ${kind} '${name}' is not a tensor; only tensor inputs and outputs can be served`);
    const dtype = fromOnnxEnum(t.elemType ?? 0);
    if (!dtype) throw new TritonError('INVALID_CONFIG', `ONNX ${kind} '${name}' has element type ${t.elemType}, which has no KServe datatype`);
    const dimsIn = t.shape?.dim ?? [];
    const dims = dimsIn.map((d) => {
      if (d.dimValue === undefined || d.dimValue === null) return -1;
      const n = typeof d.dimValue === 'number' ? d.dimValue : d.dimValue.toNumber();
      return n > 0 ? n : -1;
    });
    return { name, dtype, dims, symbolic: dims.map((d) => d === -1) };
  };
  return {
    inputs: (graph.input ?? []).filter((v) => !weights.has(v.name)).map((v) => convert(v, 'input')),
    outputs: (graph.output ?? []).map((v) => convert(v, 'output')),
  };
}

/**
 * Whether the model batches: every input and output has a symbolic first dim. Then the first dim is the
 * batch dim and the specs leave it out.
 */
export function isBatchable(signature: OnnxSignature): boolean {
  const all = [...signature.inputs, ...signature.outputs];
  return all.length > 0 && all.every((t) => t.dims.length > 0 && t.symbolic[0] === true);
}
