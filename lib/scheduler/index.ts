export { Scheduler } from './scheduler';
export type { SchedulerOptions, SchedulerHooks, EnqueueOptions, Scheduled, ExecutionRecord, Finalize } from './scheduler';
export { PriorityQueue } from './priority-queue';
export type { QueuePolicyOptions } from './priority-queue';
