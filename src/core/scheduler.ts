// Placeholder so that the API can be typed against; the implementation follows.
import type {
  Admission, CycleResult, CohortSpec, FlavorSpec, JobExplanation, JobSpec, NodeSpec, NodeStatus,
  PendingShape, Preview, PriorityClass, QueueSpec, QueueStatus, RestoredAdmission, SchedulerOptions,
} from './types.js';

export const DEFAULT_PRIORITY_CLASSES: readonly PriorityClass[] = [
  { name: 'inference-critical', value: 1000, preemptible: 'no' },
  { name: 'production', value: 500, preemptible: 'reclaim-only' },
  { name: 'training', value: 100, preemptible: 'yes' },
  { name: 'experiment', value: 10, preemptible: 'yes' },
];

export class Scheduler {
  constructor(readonly opts: SchedulerOptions) {}
  upsertFlavor(_f: FlavorSpec): void { throw new Error('not implemented'); }
  upsertNode(_n: NodeSpec): void { throw new Error('not implemented'); }
  removeNode(_name: string): void { throw new Error('not implemented'); }
  upsertCohort(_c: CohortSpec): void { throw new Error('not implemented'); }
  upsertQueue(_q: QueueSpec): void { throw new Error('not implemented'); }
  submit(_job: JobSpec): void { throw new Error('not implemented'); }
  finish(_jobId: string): void { throw new Error('not implemented'); }
  cancel(_jobId: string): void { throw new Error('not implemented'); }
  cycle(): CycleResult { throw new Error('not implemented'); }
  explain(_jobId: string): JobExplanation { throw new Error('not implemented'); }
  preview(_job: JobSpec): Preview { throw new Error('not implemented'); }
  queueStatus(_name: string): QueueStatus { throw new Error('not implemented'); }
  nodeStatus(): NodeStatus[] { throw new Error('not implemented'); }
  pendingShapes(): PendingShape[] { throw new Error('not implemented'); }
  restore(_admitted: RestoredAdmission[]): void { throw new Error('not implemented'); }
  admissionOf(_jobId: string): Admission | undefined { throw new Error('not implemented'); }
}
