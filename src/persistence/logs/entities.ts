// Job logs: what each pod of a run wrote, kept when the pod ends (its last FAIRWAY_LOG_ARCHIVE_KIB),
// so a job's logs answer after its pods are gone; pruned after FAIRWAY_LOG_RETENTION_DAYS.
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';
import { Job } from '../jobs/index.js';
import { Tenant } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

/** One archived line, as the backend read it (cut and masked only when shown). */
export interface ArchivedLogLine {
  at: number;
  stream: 'stdout' | 'stderr' | null;
  text: string;
  cursor: string;
}

export const PodLogArchive = defineEntity({
  name: 'PodLogArchive',
  tableName: 'pod_log_archives',
  filters: tenantFilter,
  // One copy per pod of a run: a replayed report finds the row and leaves it.
  uniques: [{ properties: ['job', 'admissionAt', 'podSet', 'podIndex'] }],
  indexes: [{ properties: ['endedAt'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    job: () => p.manyToOne(Job).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    /** The run's admission (ms epoch), as the backend labelled its pods. */
    admissionAt: p.bigint('number'),
    podSet: p.string().length(63),
    podIndex: p.integer(),
    lines: p.json<ArchivedLogLine[]>(),
    /** Whether earlier lines were left out (over the archive size). */
    truncated: p.boolean().default(false),
    bytes: p.integer(),
    /** When the pod's output ended (ms epoch, the backend's clock). */
    endedAt: p.bigint('number'),
    archivedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type PodLogArchive = InferEntity<typeof PodLogArchive>;

export const logEntities = [PodLogArchive];
