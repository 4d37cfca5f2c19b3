// What uses a flavor, a cohort, a node pool or a node: the reasons a delete (or a change that
// would pull capacity from under running work) is refused with CONFLICT, in words a platform
// admin can act on. Read through the caller's EntityManager (platform admins see every tenant).
import type { EntityManager } from '@mikro-orm/core';
import type { Admission, QuotaSpec } from '../../core/scheduling/index.js';
import { ClusterNode, Cohort, type NodePool, Queue } from '../../persistence/cluster/index.js';
import { InferenceService } from '../../persistence/inference/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { conflict } from '../../shared/index.js';

/** Jobs that hold, may hold or wait for capacity: pending, admitted, running. */
export const LIVE_JOB_STATES = ['PENDING', 'ADMITTED', 'RUNNING'] as const;

/** At most this many names in a message, then "and N more". */
const SHOWN = 5;

export function names(list: readonly string[]): string {
  const unique = [...new Set(list)].sort();
  const shown = unique.slice(0, SHOWN).map((n) => `"${n}"`);
  return unique.length > SHOWN ? `${shown.join(', ')} and ${unique.length - SHOWN} more` : shown.join(', ');
}

/** CONFLICT naming every use (nothing is thrown when there is none). */
export function refuseInUse(what: string, uses: string[], fix: string): void {
  if (uses.length) throw conflict(`${what} is in use: ${uses.join('; ')}. ${fix}`);
}

const quotaNames = (quotas: QuotaSpec | null | undefined): string[] => Object.keys(quotas ?? {});

interface LiveJob {
  id: string;
  state: Job['state'];
  podSets: Job['podSets'];
  admission: Admission | null;
  stoppingAdmission: Admission | null;
  queueName: string;
}

/** Live jobs (and preempted runs still stopping), with their queue's name; read-only rows, not entities. */
async function liveJobs(em: EntityManager): Promise<LiveJob[]> {
  const rows = await em.find(
    Job,
    { $or: [{ state: { $in: [...LIVE_JOB_STATES] } }, { stoppingUntil: { $ne: null } }] },
    { fields: ['id', 'state', 'podSets', 'admission', 'stoppingAdmission', 'queue'] },
  );
  const queueIds = [...new Set(rows.map((j) => j.queue.id))];
  const queues = queueIds.length ? await em.find(Queue, { id: { $in: queueIds } }) : [];
  const queueName = new Map(queues.map((q) => [q.id, q.name]));
  return rows.map((j) => ({
    id: j.id,
    state: j.state,
    podSets: j.podSets,
    admission: j.admission ?? null,
    stoppingAdmission: j.stoppingAdmission ?? null,
    queueName: queueName.get(j.queue.id) ?? j.queue.id,
  }));
}

/** The admissions a live job holds GPUs under: its current one, and a preempted run's still stopping. */
function heldAdmissions(job: LiveJob): Admission[] {
  const out: Admission[] = [];
  if ((job.state === 'ADMITTED' || job.state === 'RUNNING') && job.admission) out.push(job.admission);
  if (job.stoppingAdmission) out.push(job.stoppingAdmission);
  return out;
}

function jobsLine(jobs: LiveJob[], how: string): string[] {
  if (!jobs.length) return [];
  return [`${jobs.length} live job(s) ${how} (queue ${names(jobs.map((j) => j.queueName))})`];
}

/** Everything that names a flavor: nodes, queue and cohort quotas (time windows too), live jobs, services. */
export async function flavorUses(em: EntityManager, flavor: { id: string; name: string }): Promise<string[]> {
  const uses: string[] = [];
  const nodes = await em.find(ClusterNode, { flavor: flavor.id }, { populate: ['pool'] });
  if (nodes.length) uses.push(`${nodes.length} node(s) of node pool ${names(nodes.map((n) => n.pool.name))}`);
  const queues = (await em.find(Queue, {}, { orderBy: { name: 'asc' } })).filter(
    (q) =>
      quotaNames(q.quotas).includes(flavor.name) ||
      q.timeWindows.some((w) => quotaNames(w.quotas).includes(flavor.name)),
  );
  if (queues.length) uses.push(`the quotas of queue ${names(queues.map((q) => q.name))}`);
  const cohorts = (await em.find(Cohort, {})).filter((c) => quotaNames(c.quotas).includes(flavor.name));
  if (cohorts.length) uses.push(`the quotas of cohort ${names(cohorts.map((c) => c.name))}`);
  const jobs = (await liveJobs(em)).filter(
    (j) =>
      j.podSets.some((p) => p.flavors?.includes(flavor.name)) ||
      heldAdmissions(j).some((a) => a.podSets.some((p) => p.flavor === flavor.name)),
  );
  uses.push(...jobsLine(jobs, 'asking for or holding it'));
  const services = (await em.find(InferenceService, {}, { populate: ['queue'] })).filter((s) =>
    s.replica.flavors?.includes(flavor.name),
  );
  if (services.length)
    uses.push(
      `${services.length} inference service(s) whose replicas ask for it (queue ${names(services.map((s) => s.queue.name))})`,
    );
  return uses;
}

/** Queues in a cohort and cohorts under it. */
export async function cohortUses(em: EntityManager, cohort: Cohort): Promise<string[]> {
  const uses: string[] = [];
  const queues = await em.find(Queue, { cohort: cohort.id });
  if (queues.length) uses.push(`queue ${names(queues.map((q) => q.name))} belong(s) to it`);
  const children = await em.find(Cohort, { parent: cohort.id });
  if (children.length) uses.push(`cohort ${names(children.map((c) => c.name))} nest(s) under it`);
  return uses;
}

export async function nodePoolUses(em: EntityManager, pool: NodePool): Promise<string[]> {
  const nodes = await em.find(ClusterNode, { pool: pool.id });
  return nodes.length ? [`it has ${nodes.length} node(s): ${names(nodes.map((n) => n.name))}`] : [];
}

/** Live jobs with pods placed on any of these nodes (a stopping run's pods count). */
export async function jobsOnNodes(em: EntityManager, nodeNames: readonly string[]): Promise<string[]> {
  if (!nodeNames.length) return [];
  const wanted = new Set(nodeNames);
  const busy = new Set<string>();
  const jobs = (await liveJobs(em)).filter((j) => {
    let on = false;
    for (const a of heldAdmissions(j))
      for (const p of a.podSets)
        for (const placement of p.placements)
          if (wanted.has(placement.node)) {
            busy.add(placement.node);
            on = true;
          }
    return on;
  });
  return jobs.length ? [`node ${names([...busy])} run(s) ${jobsLine(jobs, 'placed there')[0]}`] : [];
}
