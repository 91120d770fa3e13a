export { Scheduler } from './scheduler';
export type { SchedulerOptions, SchedulerHooks } from './scheduler';
