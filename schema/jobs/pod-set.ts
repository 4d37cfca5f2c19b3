import type { PodSetSpec } from '../../src/services/jobs/index.js';
import { builder } from '../builder.js';

/** One group of identical pods of a job, as submitted. */
export const PodSetRef = builder.objectRef<PodSetSpec>('PodSet').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    count: t.exposeInt('count'),
    minCount: t.int({
      description: 'Gang minimum: all pods up to this many start together or none do.',
      resolve: (p) => p.minCount ?? p.count,
    }),
    gpusPerPod: t.float({ resolve: (p) => p.perPod.gpu ?? 0 }),
    cpuMillisPerPod: t.int({ resolve: (p) => p.perPod.cpu ?? 0 }),
    memoryMiBPerPod: t.int({ resolve: (p) => p.perPod.memory ?? 0 }),
    flavors: t.stringList({ nullable: true, resolve: (p) => p.flavors ?? null }),
  }),
});
