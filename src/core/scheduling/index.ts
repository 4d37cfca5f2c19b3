export { SchedulerInputError, type SchedulerInputErrorCode } from './errors.js';
// What the simulator replays with besides the scheduler: its heap and the time-window clock.
export { IndexedHeap } from './heap.js';
export type { CoreConfiguration, SpecChange } from './reconfigure.js';
export { DEFAULT_PRIORITY_CLASSES, Scheduler } from './scheduler.js';
export * from './types.js';
export { parseClock, windowOpen } from './windows.js';
