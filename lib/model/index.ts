export { Model } from './model';
export type { ModelInit } from './model';
export type { ModelState } from './model-view';
export type { ModelMetadata } from '../protocol/model-metadata';
export { ModelRepository } from './model-repository';
export type { InferenceRequest, InferenceResponse, NamedTensor } from './inference';
