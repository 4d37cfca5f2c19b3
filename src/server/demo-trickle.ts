import { randomUUID } from 'node:crypto';
import { Membership, User, scopedEntityManager, systemEntityManager } from '../persistence/entities.js';
import { ProjectMembership } from '../persistence/access-entities.js';
import { Queue } from '../persistence/scheduling-entities.js';
import { tenantFilterFor, type Principal } from '../auth/principal.js';
import { principalForUser } from '../auth/identity.js';
import { createLoaders } from '../services/loaders.js';
import { submitJob } from '../services/jobs.js';
import type { FairwayApp } from './app.js';

const SHAPES = [
  { gpusPerPod: 1, count: 1, flavor: 'h100-80g', seconds: [600, 3600] },
  { gpusPerPod: 4, count: 1, flavor: 'h100-80g', seconds: [1800, 7200] },
  { gpusPerPod: 8, count: 2, flavor: 'h100-80g', seconds: [3600, 14_400] },
  { gpusPerPod: 2, count: 1, flavor: 'a100-1g.10gb', seconds: [300, 1800] },
  { gpusPerPod: 1, count: 4, flavor: 'a100-1g.10gb', seconds: [600, 2400] },
] as const;
const CLASSES = ['experiment', 'training', 'training', 'production'];

/**
 * Keeps demo jobs flowing so someone opening GraphiQL sees queues move: every few seconds
 * a demo member submits a small job through the same use case a client would call.
 * Stops submitting while a queue already has a backlog, so the demo does not pile up.
 */
export function startDemoTrickle(app: FairwayApp, options: { everyMs?: number; maxPendingPerQueue?: number } = {}): () => void {
  const everyMs = options.everyMs ?? 4000;
  const maxPending = options.maxPendingPerQueue ?? 6;
  let n = 0;
  const tick = async () => {
    const em = systemEntityManager(app.orm);
    const members = await em.find(Membership, { role: 'MEMBER' }, { populate: ['user'] });
    const member = members[n++ % Math.max(1, members.length)];
    if (!member) return;
    const queue = await em.findOne(Queue, { tenant: member.tenant.id });
    if (!queue || (app.scheduler.queueStatus(queue.name)?.pendingCount ?? 0) >= maxPending) return;
    // A project the member contributes to (they may submit nowhere else).
    const contributes = await em.findOne(ProjectMembership, { user: member.user.id, tenant: member.tenant.id, role: { $in: ['CONTRIBUTOR', 'PROJECT_ADMIN'] }, project: { status: 'ACTIVE' } }, { populate: ['project'] });
    const project = contributes?.project;
    if (!project) return;
    const shape = SHAPES[Math.floor(Math.random() * SHAPES.length)]!;
    const [min, max] = shape.seconds;
    const principal = await principalOf(app, member.user);
    const requestEm = scopedEntityManager(app.orm, tenantFilterFor(principal));
    await submitJob(
      { em: requestEm, principal, requestId: `demo-${randomUUID()}`, now: () => new Date(), events: app.events, scheduler: app.scheduler, loaders: createLoaders(requestEm) },
      {
        queueId: queue.id,
        projectId: project.id,
        name: `demo-${shape.flavor === 'h100-80g' ? 'train' : 'eval'}-${n}`,
        priorityClass: CLASSES[Math.floor(Math.random() * CLASSES.length)]!,
        podSets: [{ name: 'main', count: shape.count, perPod: { gpu: shape.gpusPerPod, cpu: 8000 * shape.gpusPerPod, memory: 32_768 * shape.gpusPerPod }, flavors: [shape.flavor] }],
        expectedDurationMs: Math.round((min + Math.random() * (max - min)) * 1000),
      },
    );
  };
  const timer = setInterval(() => {
    tick().catch((error) => console.error('[fairway] demo trickle:', error instanceof Error ? error.message : error));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

async function principalOf(app: FairwayApp, user: User): Promise<Principal> {
  return principalForUser(systemEntityManager(app.orm), user, Date.now());
}
