export { Model } from './model';
export type { ModelInit, ModelState } from './model';
export type { ModelMetadata } from '../protocol/model-metadata';
export { ModelRepository } from './model-repository';
export type { InferenceRequest, InferenceResponse, NamedTensor } from './inference';
