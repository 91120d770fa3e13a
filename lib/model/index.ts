export { Model } from './model';
export type { ModelInit, ModelState, ModelMetadata } from './model';
export { ModelRepository } from './model-repository';
export type { InferenceRequest, InferenceResponse, NamedTensor } from './inference';
