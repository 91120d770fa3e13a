// The public surface of tstriton, listed explicitly so it can be reviewed in one place; docs/api.md lists the same
// names, and test/unit/public-api.test.ts holds the two together. Everything else is internal.

// The server.
export { Triton } from './triton/triton';
export { capMallocArenas } from './base/malloc-arenas';
export type { RunOptions } from './triton/triton';
export type { BindOptions } from './model/bind-options';
export type { BoundModel } from './model/bound-model';
export type { HttpRouter, RouteHandler, RouteRequest, RouteResponse } from './server/http/http-router';
export { TritonConfig } from './config';
export type { TritonConfigInit } from './config';

// Callables: what a model receives and returns.
export type { Request, Response, InferCallable, DecoupledCallable, StreamItem, InferCall, OutputValue, ParameterValue, ResponseParameters, SequenceInfo } from './callable/callable';
export { RESPONSE_PARAMETERS, withParameters } from './callable/callable';
export type { InferFunc, LifecycleHooks, InstanceFactory, InstanceTarget } from './callable/infer-func';
export { instanceFactory } from './callable/infer-func';
export type { InstanceContext, Device, DeviceKind } from './callable/instance-context';
export type { CustomMetrics, CustomMetricFamily, CustomMetric, MetricFamilySpec, MetricKind } from './callable/custom-metrics';
export type { ChatTemplate, ChatMessage } from './model/chat-template';
export type { ScriptModel, ScriptModelArgs } from './repository/script-model';

// What `inferFunc` can also be: worker threads, an ONNX file, an ensemble.
export { workers } from './instances/worker-spec';
export type { WorkersInit, WorkerOptions, WorkerSpec } from './instances/worker-spec';
export { onnxModel } from './onnx/onnx-model';
export type { OnnxModelInit, OnnxModelSpec } from './onnx/onnx-model';
export type { OnnxExecutionMode, OnnxGraphOptimizationLevel, OnnxSessionOptions } from './onnx/onnx-session-options';
export { ensemble } from './model/ensemble-spec';
export type { EnsembleSpec, EnsembleStep } from './model/ensemble-spec';

// Model config (the rest of it, and `toPbtxt`, is in `tstriton/config`).
export { TensorSpec, ModelConfig, DynamicBatcher, QueuePolicy, WarmupSetting, SequenceBatching } from './config';
export type { TensorSpecInit, ModelConfigInit, DynamicBatcherInit, QueuePolicyInit, WarmupSettingInit, SequenceBatchingInit, ModelConfigJson } from './config';

// Tensors.
export { tensor } from './tensor/tensor';
export type { Tensor } from './tensor/tensor';
export { DATA_TYPES } from './tensor/dtype';
export type { DataType, TensorData } from './tensor/dtype';

// Errors.
export { TritonError, UnrecoverableError } from './base/errors';
export type { ErrorCode } from './base/errors';
