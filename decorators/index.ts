// The public surface of tstriton/decorators, listed explicitly. See docs/decorators.md for how they compose.

// Request level: raw callable in, raw callable out (place above @batch).
export { batch, splitOutputs } from './batch';
export { sample } from './sample';
export type { SampleFn } from './sample';
export { groupByKeys } from './group-by-keys';
export { fillOptionals } from './fill-optionals';
export type { DefaultValue, DefaultScalar } from './fill-optionals';
export { tritonContext } from './triton-context';
export type { ContextFn } from './triton-context';

// Batch level: batch function in, batch function out (place below @batch).
export { groupByValues } from './group-by-values';
export type { GroupByValuesOptions } from './group-by-values';
export { padBatch } from './pad-batch';
export type { PadBatch, PadBatchOptions } from './pad-batch';
export { firstValue } from './first-value';
export type { FirstValueOptions } from './first-value';
export { constantPadder } from './pad';
export type { PadFn, PadMode, PadOptions } from './pad';

export type { BatchFn, BatchContext, BatchOutputs, TritonContext } from './context';
export { makeDecorator, makeBatchDecorator } from './decorate';
export type { Decorator, BatchDecorator, Adapter, BatchTransform, RequestsFn } from './decorate';
export type { MarkedCallable } from '../lib/callable/callable-marks';
