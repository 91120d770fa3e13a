// The public surface of `tstriton/config`: the config classes and their plain forms, and the model config's
// `config.pbtxt` text (docs/api.md). Validation and the environment variables' names are internal.
export { TensorSpec } from './tensor-spec';
export type { TensorSpecInit } from './tensor-spec';
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
export { TritonConfig } from './triton-config';
export type { TritonConfigInit, LogLevel, GpuExecutionProvider } from './triton-config';
export { toPbtxt } from './triton-model-config';
export type { ModelConfigJson } from './triton-model-config';
export { parseModelConfigText, formatModelConfigText } from './model-config-text';
