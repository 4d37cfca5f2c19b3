import { randomUUID } from 'node:crypto';
import { type Principal, principalForUser, tenantFilterFor } from '../../auth/index.js';
import { Queue } from '../../persistence/cluster/index.js';
import { Membership, ProjectMembership, type User } from '../../persistence/tenancy/index.js';
import { scopedEntityManager, systemEntityManager } from '../../persistence/tenant-filter.js';
import { submitJob } from '../../services/jobs/index.js';
import { createLoaders } from '../../services/loaders.js';
import type { FairwayApp } from '../app.js';

interface TrickleShape {
  gpusPerPod: number;
  count: number;
  flavor: string;
  /** Declared run time in seconds, drawn uniformly between the two (at 60× a real minute is a declared
   * hour).
   */
  seconds: readonly [number, number];
}

/**
 * What each demo tenant keeps submitting in the background.
 *
 * The README's example job is Aurora's: `training`, 2 × 8 H100, exactly Aurora's H100 quota
 * (16, GUARANTEED: it never borrows). So background work must never stand in its way:
 * - Aurora's background jobs are `experiment`, the lowest, preemptible class. A person's
 *   `training` (or `production`) job outranks every one of them and, under the queue's
 *   `withinQueue: LowerPriority`, preempts them when it needs their GPUs. (Before, a third of
 *   them were `training` — equal, not preemptible, and smaller, so BestEffortFIFO let them pass
 *   the big job again and again — and a quarter `production`, which preempted it.)
 * - Borealis (an inference tenant) runs on the MIG slices only. Jobs inside its own nominal
 *   are not reclaimable, so H100 jobs of Borealis spread over the four H100 nodes could leave
 *   no two whole nodes for Aurora's gang however much quota Aurora had left.
 * Borealis's classes vary, so within-queue preemptions still happen in the demo, and both
 * tenants share the MIG flavor, so Borealis borrows Aurora's idle slices and gets reclaimed.
 */
export const TRICKLE_PROFILES: Record<
  string,
  { shapes: readonly TrickleShape[]; classes: readonly string[] }
> = {
  'aurora-research': {
    shapes: [
      { gpusPerPod: 1, count: 1, flavor: 'h100-80g', seconds: [600, 3600] },
      { gpusPerPod: 4, count: 1, flavor: 'h100-80g', seconds: [1800, 7200] },
      { gpusPerPod: 8, count: 2, flavor: 'h100-80g', seconds: [3600, 14_400] },
      { gpusPerPod: 2, count: 1, flavor: 'a100-1g.10gb', seconds: [300, 1800] },
    ],
    classes: ['experiment'],
  },
  'borealis-inference': {
    shapes: [
      { gpusPerPod: 2, count: 1, flavor: 'a100-1g.10gb', seconds: [300, 1800] },
      { gpusPerPod: 1, count: 4, flavor: 'a100-1g.10gb', seconds: [600, 2400] },
    ],
    classes: ['experiment', 'training', 'training', 'production'],
  },
};
const DEFAULT_PROFILE = {
  shapes: [{ gpusPerPod: 1, count: 1, flavor: 'a100-1g.10gb', seconds: [300, 1800] }],
  classes: ['experiment'],
} as const;

export function startDemoTrickle(
  app: FairwayApp,
  options: { everyMs?: number; maxPendingPerQueue?: number; random?: () => number } = {},
): () => void {
  const everyMs = options.everyMs ?? 4000;
  const maxPending = options.maxPendingPerQueue ?? 6;
  const random = options.random ?? Math.random;
  let n = 0;
  const tick = async () => {
    const em = systemEntityManager(app.orm);
    const members = await em.find(Membership, { role: 'MEMBER' }, { populate: ['user', 'tenant'] });
    const member = members[n++ % Math.max(1, members.length)];
    if (!member) return;
    const queue = await em.findOne(Queue, { tenant: member.tenant.id });
    if (!queue || (app.scheduler.queueStatus(queue.name)?.pendingCount ?? 0) >= maxPending) return;
    // A project the member contributes to (they may submit nowhere else).
    const contributes = await em.findOne(
      ProjectMembership,
      {
        user: member.user.id,
        tenant: member.tenant.id,
        role: { $in: ['CONTRIBUTOR', 'PROJECT_ADMIN'] },
        project: { status: 'ACTIVE' },
      },
      { populate: ['project'] },
    );
    const project = contributes?.project;
    if (!project) return;
    const profile = TRICKLE_PROFILES[member.tenant.slug] ?? DEFAULT_PROFILE;
    const shape = profile.shapes[Math.floor(random() * profile.shapes.length)]!;
    const [min, max] = shape.seconds;
    const principal = await principalOf(app, member.user);
    const requestEm = scopedEntityManager(app.orm, tenantFilterFor(principal));
    await submitJob(
      {
        em: requestEm,
        principal,
        requestId: `demo-${randomUUID()}`,
        now: () => new Date(),
        events: app.events,
        scheduler: app.scheduler,
        loaders: createLoaders(requestEm),
      },
      {
        queueId: queue.id,
        projectId: project.id,
        name: `demo-${shape.flavor === 'h100-80g' ? 'train' : 'eval'}-${n}`,
        priorityClass: profile.classes[Math.floor(random() * profile.classes.length)]!,
        podSets: [
          {
            name: 'main',
            count: shape.count,
            perPod: {
              gpu: shape.gpusPerPod,
              cpu: 8000 * shape.gpusPerPod,
              memory: 32_768 * shape.gpusPerPod,
            },
            flavors: [shape.flavor],
          },
        ],
        expectedDurationMs: Math.round((min + random() * (max - min)) * 1000),
      },
    );
  };
  const timer = setInterval(() => {
    tick().catch((error) =>
      console.error('[fairway] demo trickle:', error instanceof Error ? error.message : error),
    );
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

async function principalOf(app: FairwayApp, user: User): Promise<Principal> {
  return principalForUser(systemEntityManager(app.orm), user, Date.now());
}
