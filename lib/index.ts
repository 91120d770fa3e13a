// The public surface of tstriton, listed explicitly so it can be reviewed in one place.
export { Triton } from './triton';
export type { BindOptions, RunOptions, Transport } from './triton';
export type { ChatTemplate, ChatMessage } from './model/chat-template';
export { TritonError, UnrecoverableError, ERROR_CODES, GrpcStatus, toTritonError } from './errors';
export type { ErrorCode } from './errors';
export type { Request, Response, InferCallable, DecoupledCallable, StreamItem, InferCall, OutputValue, ParameterValue, ResponseParameters, SequenceInfo } from './callable';
export { RESPONSE_PARAMETERS, withParameters } from './callable';
export type { CustomMetrics, CustomMetricFamily, CustomMetric, MetricFamilySpec, MetricKind } from './custom-metrics';
export { instanceFactory } from './infer-func';
export type { InferFunc, LifecycleHooks, InstanceFactory, InstanceTarget } from './infer-func';
export { workers } from './instances';
export { onnxModel } from './onnx/onnx-model';
export { ensemble } from './model/ensemble';
export type { ScriptModel, ScriptModelArgs } from './repository/script-model';
export type { LoadOverride } from './model/model-control';
export type { EnsembleSpec, EnsembleStep } from './model/ensemble';
export type { OnnxModelInit, OnnxModelSpec } from './onnx/onnx-model';
export type { WorkersInit, WorkerOptions, WorkerSpec, InstanceContext, HealthEvent } from './instances';
export {
  TensorSpec,
  ModelConfig,
  DynamicBatcher,
  QueuePolicy,
  WarmupSetting,
  SequenceBatching,
  TritonConfig,
  buildModelConfigJson,
} from './config';
export type {
  TensorSpecInit,
  ModelConfigInit,
  DynamicBatcherInit,
  QueuePolicyInit,
  WarmupSettingInit,
  TritonConfigInit,
  TimeoutAction,
  LogLevel,
  GpuExecutionProvider,
  ModelConfigJson,
  SequenceBatchingInit,
  SequenceControlInit,
  SequenceStateInit,
  BatchInputInit,
  BatchOutputInit,
} from './config';
export { DTYPES, DATA_TYPES, tensor, elementCount, concatBatch, sliceBatch } from './tensor';
export type { DataType, Tensor, TensorData } from './tensor';
export { ModelRepository } from './model';
export type { InferenceRequest, InferenceResponse, ModelMetadata } from './model';
export type { Device, DeviceKind, Instance } from './instances';
export type { ServerMetadata } from './server/server-core';
export { VERSION } from './version';
