/**
 * Pre-encodes `tstriton perf`'s requests once, before the load, so that the load threads only write bytes: raw
 * HTTP/1.1 requests (the KServe v2 JSON header with the binary tensor extension, or JSON data), or serialized gRPC
 * ModelInferRequest messages in gRPC's length-prefixed framing.
 */
import type * as grpc from '@grpc/grpc-js';
import { parametersJson, toInferParameters, type ParameterValue } from '../protocol/infer-parameter';
import type { ModelInferRequestMessage } from '../protocol/messages';
import { loadProtos } from '../protocol/protos';
import { encodeBinary } from '../tensor/binary-codec';
import { encodeJsonData } from '../tensor/json-codec';
import type { NamedTensor } from '../tensor/named-tensor';
import { grpcFrame } from './grpc-load-connection';

/** An input a request carries: its tensor, or where the tensor lies in a registered shared-memory region. */
export type RequestInput =
  | NamedTensor
  | { readonly name: string; readonly datatype: string; readonly shape: readonly number[]; readonly region: string; readonly offset: number; readonly byteSize: number };

/** An output a request asks to have written into a registered shared-memory region. */
export interface RequestOutput {
  readonly name: string;
  readonly region: string;
  readonly byteSize: number;
}

/** What every request of a run has in common. */
export interface RequestFrame {
  readonly protocol: 'http' | 'grpc';
  /** `host:port`, for the HTTP Host header. */
  readonly authority: string;
  readonly model: string;
  readonly version: string;
  /** Extra HTTP headers (gRPC metadata is sent by the channel). */
  readonly headers: Readonly<Record<string, string>>;
  /** HTTP: inputs in the binary tensor extension (perf_analyzer's default) or as JSON `data`. */
  readonly inputFormat: 'binary' | 'json';
  /** HTTP: outputs asked for in the binary tensor extension, or as JSON. */
  readonly outputFormat: 'binary' | 'json';
  /** Outputs written into shared memory (`--shared-memory system`); absent: every output comes back in the answer. */
  readonly outputs?: readonly RequestOutput[];
}

/** One request's bytes: its inputs, with request parameters (sequence id, start, end) when the model needs them. */
export function encodeRequest(frame: RequestFrame, inputs: readonly RequestInput[], parameters: Readonly<Record<string, ParameterValue>> = {}): Uint8Array {
  return frame.protocol === 'grpc' ? grpcRequest(frame, inputs, parameters) : httpRequest(frame, inputs, parameters);
}

function isTensor(input: RequestInput): input is NamedTensor {
  return 'tensor' in input;
}

function httpRequest(frame: RequestFrame, inputs: readonly RequestInput[], parameters: Readonly<Record<string, ParameterValue>>): Uint8Array {
  const blobs: Uint8Array[] = [];
  const described = inputs.map((input) => {
    const name = JSON.stringify(input.name);
    if (!isTensor(input)) {
      return `{"name":${name},"datatype":"${input.datatype}","shape":[${input.shape.join(',')}],"parameters":{"shared_memory_region":${JSON.stringify(input.region)},"shared_memory_offset":${input.offset},"shared_memory_byte_size":${input.byteSize}}}`;
    }
    const head = `{"name":${name},"datatype":"${input.tensor.dtype}","shape":[${input.tensor.shape.join(',')}]`;
    if (frame.inputFormat === 'json') return `${head},"data":${encodeJsonData(input.tensor)}}`;
    const blob = encodeBinary(input.tensor);
    blobs.push(blob);
    return `${head},"parameters":{"binary_data_size":${blob.byteLength}}}`;
  });
  const params = { ...parameters, ...(frame.outputFormat === 'binary' && !frame.outputs && { binary_data_output: true }) };
  const outputs = frame.outputs?.map(
    (o) => `{"name":${JSON.stringify(o.name)},"parameters":{"shared_memory_region":${JSON.stringify(o.region)},"shared_memory_offset":0,"shared_memory_byte_size":${o.byteSize}}}`,
  );
  const json = Buffer.from(`{"parameters":${parametersJson(params)},"inputs":[${described.join(',')}]${outputs ? `,"outputs":[${outputs.join(',')}]` : ''}}`, 'utf8');
  const bodyLength = json.byteLength + blobs.reduce((a, b) => a + b.byteLength, 0);
  const path = `/v2/models/${encodeURIComponent(frame.model)}${frame.version ? `/versions/${encodeURIComponent(frame.version)}` : ''}/infer`;
  const headers = [
    `POST ${path} HTTP/1.1`,
    `Host: ${frame.authority}`,
    `Content-Length: ${bodyLength}`,
    ...(blobs.length > 0 ? ['Content-Type: application/octet-stream', `Inference-Header-Content-Length: ${json.byteLength}`] : ['Content-Type: application/json']),
    ...Object.entries(frame.headers).map(([k, v]) => `${k}: ${v}`),
  ];
  return Buffer.concat([Buffer.from(`${headers.join('\r\n')}\r\n\r\n`, 'latin1'), json, ...blobs]);
}

function grpcRequest(frame: RequestFrame, inputs: readonly RequestInput[], parameters: Readonly<Record<string, ParameterValue>>): Uint8Array {
  const message: ModelInferRequestMessage = {
    model_name: frame.model,
    model_version: frame.version,
    parameters: toInferParameters(parameters),
    inputs: inputs.map((input) =>
      isTensor(input)
        ? { name: input.name, datatype: input.tensor.dtype, shape: [...input.tensor.shape] }
        : { name: input.name, datatype: input.datatype, shape: [...input.shape], parameters: toInferParameters({ shared_memory_region: input.region, shared_memory_offset: input.offset, shared_memory_byte_size: input.byteSize }) },
    ),
    raw_input_contents: inputs.filter(isTensor).map((input) => encodeBinary(input.tensor)),
    ...(frame.outputs && {
      outputs: frame.outputs.map((o) => ({ name: o.name, parameters: toInferParameters({ shared_memory_region: o.region, shared_memory_offset: 0, shared_memory_byte_size: o.byteSize }) })),
    }),
  };
  const method = loadProtos('string').inference.ModelInfer as grpc.MethodDefinition<ModelInferRequestMessage, unknown>;
  return grpcFrame(method.requestSerialize(message));
}
