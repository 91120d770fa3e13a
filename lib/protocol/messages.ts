/**
 * The gRPC messages tstriton reads and writes, as @grpc/proto-loader presents them (snake_case fields).
 * 64-bit integers arrive as strings or numbers depending on the loader (see `loadProtos`) and may be
 * sent as either; unset sub-messages arrive as null.
 */

/** A 64-bit integer field: a decimal string keeps every bit, a number is exact up to 2^53. */
export type Int64 = string | number;

/** `inference.InferParameter`: one of its fields is set; `parameter_choice` names it when oneofs are on. */
export interface InferParameterMessage {
  bool_param?: boolean;
  int64_param?: Int64;
  string_param?: string;
  double_param?: number;
  uint64_param?: Int64;
  parameter_choice?: string;
}

/** A `map<string, InferParameter>` field. */
export type InferParameterMap = Record<string, InferParameterMessage>;

/** `inference.InferTensorContents`: typed tensor data, the alternative to raw contents. */
export interface InferTensorContentsMessage {
  bool_contents?: boolean[];
  int_contents?: number[];
  int64_contents?: Int64[];
  uint_contents?: number[];
  uint64_contents?: Int64[];
  fp32_contents?: number[];
  fp64_contents?: number[];
  bytes_contents?: Uint8Array[];
}

/** `ModelInferRequest.InferInputTensor`. */
export interface InferInputTensorMessage {
  name: string;
  datatype: string;
  shape: Int64[];
  parameters?: InferParameterMap;
  contents?: InferTensorContentsMessage | null;
}

/** `ModelInferRequest.InferRequestedOutputTensor`. */
export interface InferRequestedOutputTensorMessage {
  name: string;
  parameters?: InferParameterMap;
}

/** `inference.ModelInferRequest`. */
export interface ModelInferRequestMessage {
  model_name: string;
  model_version?: string;
  id?: string;
  parameters?: InferParameterMap;
  inputs: InferInputTensorMessage[];
  outputs?: InferRequestedOutputTensorMessage[];
  /** Raw little-endian tensor bytes, one entry per input that has no `contents`, in input order. */
  raw_input_contents?: Uint8Array[];
  /**
   * Not a protobuf field: the buffer the message arrived in, when the decoder knows it holds this message
   * and nothing else (a worker instance may then move it instead of copying large inputs out of it).
   */
  movableBuffer?: ArrayBufferLike;
}

/** `ModelInferResponse.InferOutputTensor`. */
export interface InferOutputTensorMessage {
  name: string;
  datatype: string;
  shape: Int64[];
  parameters?: InferParameterMap;
  contents?: InferTensorContentsMessage | null;
}

/** `inference.ModelInferResponse`. */
export interface ModelInferResponseMessage {
  model_name: string;
  model_version: string;
  id: string;
  parameters?: InferParameterMap;
  outputs: InferOutputTensorMessage[];
  /** Exactly one entry per output, same index as `outputs`. */
  raw_output_contents: Uint8Array[];
}

/** `inference.ModelStreamInferResponse`: an error message or a response, never closing the stream. */
export interface ModelStreamInferResponseMessage {
  error_message: string;
  infer_response: ModelInferResponseMessage | null;
}

/** The `{name, version}` request of ModelReady, ModelMetadata, ModelConfig and ModelStatistics. */
export interface ModelRequestMessage {
  name: string;
  version: string;
}

/** `ModelMetadataResponse.TensorMetadata`. */
export interface TensorMetadataMessage {
  name: string;
  datatype: string;
  shape: Int64[];
}

/** `inference.ModelMetadataResponse`. */
export interface ModelMetadataResponseMessage {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadataMessage[];
  outputs: TensorMetadataMessage[];
}

/** `inference.ServerMetadataResponse`. */
export interface ServerMetadataResponseMessage {
  name: string;
  version: string;
  extensions: string[];
}

/** `inference.ModelConfigResponse`; the config is the JSON form of `inference.ModelConfig`. */
export interface ModelConfigResponseMessage {
  config: Record<string, unknown> | null;
}

/** `grpc.health.v1.HealthCheckResponse.ServingStatus`. */
export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';

/** `grpc.health.v1.HealthCheckResponse`. */
export interface HealthCheckResponseMessage {
  status: ServingStatus;
}
