// The public surface of `tstriton/client`.
export { ModelClient } from './model-client';
export type { ModelClientOptions, CallOptions, InferOptions, StreamOptions, StreamResponse, WaitOptions } from './model-client';
export { ClientError } from './client-error';
export { RESPONSE_PARAMETERS, parametersOf } from '../callable/callable';
export type { ResponseParameters } from '../callable/callable';
export type { ClientTlsOptions } from './client-tls';
export type { InferInput, InferInputs, InputData } from './infer-inputs';
export { tensor } from '../tensor/tensor';
export type { Tensor } from '../tensor/tensor';
export type { DataType, TensorData } from '../tensor/dtype';
export type { ModelMetadata } from '../protocol/model-metadata';
export type { ModelConfigJson } from '../config/triton-model-config';
