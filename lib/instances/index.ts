export { InProcessInstance } from './in-process-instance';
export { parseDevice } from './instance';
export type { Device, DeviceKind, Instance, InstanceContext } from './instance';
