export { TensorSpec, nameSpecs } from './tensor-spec';
export type { TensorSpecInit, NamedTensorSpec } from './tensor-spec';
export { ModelConfig, DynamicBatcher, QueuePolicy, WarmupSetting } from './model-config';
export { SequenceBatching } from './sequence-batching';
export type {
  SequenceBatchingInit,
  SequenceControlInit,
  SequenceControlKind,
  ControlInputInit,
  SequenceStateInit,
  InitialStateInit,
  DirectStrategyInit,
  OldestStrategyInit,
} from './sequence-batching';
export type { BatchInputInit, BatchInputKind, BatchOutputInit } from './ragged-batching';
export type { ModelConfigInit, DynamicBatcherInit, QueuePolicyInit, WarmupSettingInit, WarmupInputInit, TimeoutAction } from './model-config';
export { TritonConfig, LOG_LEVELS, GPU_EXECUTION_PROVIDERS, envName } from './triton-config';
export type { TritonConfigInit, LogLevel, GpuExecutionProvider } from './triton-config';
export { buildModelConfigJson, toPbtxt } from './triton-model-config';
export type { ModelDescription, InstanceGroupDescription, ModelConfigJson } from './triton-model-config';
export { validateOrThrow } from './validate';
export { parseModelConfigText, formatModelConfigText } from './model-config-text';
