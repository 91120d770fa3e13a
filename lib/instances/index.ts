export { InProcessInstance } from './in-process-instance';
export { WorkerInstance } from './worker-instance';
export { createInstances } from './create-instances';
export { workers, isWorkerSpec } from './worker-spec';
export { parseDevice } from './instance';
export type { Device, DeviceKind, HealthEvent, Instance, InstanceContext } from './instance';
export type { WorkerOptions, WorkerSpec, WorkersInit } from './worker-spec';
