export { SECRET_MASK } from '../../core/logs/index.js';
export { logRetentionTask } from './archive.js';
export type { FollowQuery, LogBatch } from './follow.js';
export type { LogLine } from './lines.js';
export { DEFAULT_LOG_TAIL, type LogPage, type LogQuery, MAX_LOG_TAIL } from './read.js';
export { type JobClusterEvent, JobLogsService, type JobLogsSettings } from './service.js';
