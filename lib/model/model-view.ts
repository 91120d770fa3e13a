import type { ModelConfigJson } from '../config/triton-model-config';
import type { ModelMetadata } from '../protocol/model-metadata';
import type { NamedTensorSpec } from '../config/tensor-spec';

/** Where a model version is in its life, as the repository index reports it. */
export type ModelState = 'LOADING' | 'READY' | 'UNLOADING' | 'UNAVAILABLE';

/**
 * What a transport may know of a model: its name, version and tensor specs (to decode a request and encode its
 * response), the two config facts that shape the wire (batching, decoupled), and what the metadata, config and
 * ready endpoints report. A `Model` is one; a front-end thread holds a copy of the core thread's.
 */
export interface ModelView {
  readonly name: string;
  readonly version: string;
  readonly inputs: readonly NamedTensorSpec[];
  readonly outputs: readonly NamedTensorSpec[];
  readonly config: { readonly effectiveMaxBatchSize: number; readonly decoupled: boolean };
  /** Its state: only a version at `READY` serves requests (`servingVersion`). */
  readonly state: ModelState;
  /** At `READY`, and able to run requests now (an instance in service). */
  readonly ready: boolean;
  readonly configJson: ModelConfigJson;
  readonly metadata: ModelMetadata;
}

/** The part of a model a front-end thread keeps: enough to decode its requests and encode its responses. */
export type ModelShape = Pick<ModelView, 'name' | 'version' | 'inputs' | 'outputs' | 'config'>;

/** A model's shape, as plain data that can cross to another thread. */
export function shapeOf(model: ModelView): ModelShape {
  const { name, version, inputs, outputs, config } = model;
  return { name, version, inputs, outputs, config: { effectiveMaxBatchSize: config.effectiveMaxBatchSize, decoupled: config.decoupled } };
}

/** The models as a transport finds them (the server's `ModelRepository`, or a front-end thread's view of it). */
export interface ModelLookup {
  /**
   * The model version that serves a request naming this name and version: the one named, or the highest ready
   * one (`servingVersion`, which says what it throws otherwise).
   */
  get(name: string, version?: string): ModelView;
  /** The model version that describes a name and version whatever its state (`describedVersion`). */
  find(name: string, version?: string): ModelView;
  has(name: string): boolean;
  all(): readonly ModelView[];
  /** The metadata of the model version `get` finds, listing every ready version of its name. */
  metadataOf(name: string, version?: string): ModelMetadata;
}
