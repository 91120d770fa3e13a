import type { ModelConfig, ModelConfigInit } from '../config/model-config';
import type { TensorSpec, TensorSpecInit } from '../config/tensor-spec';
import type { InferFunc } from '../callable/infer-func';
import type { OnnxModelSpec } from '../onnx/onnx-model';
import type { ChatTemplate } from './chat-template';
import type { EnsembleSpec } from './ensemble-spec';

/** Arguments of `Triton.bind()`, as PyTriton's `bind`. */
export interface BindOptions {
  /** Model name: letters, digits, `_`, `-`, `.`; no path characters. */
  modelName: string;
  /** Model version (a positive integer); 1 by default. */
  modelVersion?: number;
  /**
   * The callable: a function, an object with a decorated method, a class, an `instanceFactory(...)`, or
   * `workers({ module, devices })` for worker threads, or `onnxModel({ path })`; or a list of them (one
   * instance each).
   */
  inferFunc: InferFunc | OnnxModelSpec | EnsembleSpec;
  /** Inputs; for `onnxModel(...)` they are read from the model and may be left out. */
  inputs?: readonly (TensorSpec | TensorSpecInit)[];
  /** Outputs; for `onnxModel(...)` they are read from the model and may be left out. */
  outputs?: readonly (TensorSpec | TensorSpecInit)[];
  config?: ModelConfig | ModelConfigInit;
  /** Also check output shapes against the declared dims (dtype and batch size are always checked). */
  strict?: boolean;
  /** How `/v1/chat/completions` turns a chat into this model's `text_input` (docs/openai.md). */
  chatTemplate?: ChatTemplate;
}
