export { batch, splitOutputs } from './batch';
export type { BatchFn, BatchContext } from './batch';
export { sample } from './sample';
export type { SampleFn } from './sample';
export { makeDecorator } from './decorate';
export type { Decorator, Adapter } from './decorate';
