// Reading and validating a queues file: the schema's checks, then names, cohort parents and cycles, and the
// flavors against the cluster.
import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import type { SimCluster } from './cluster.js';
import { type Doc, DocError, parseDoc, type Value } from './doc.js';
import {
  issueError,
  message,
  type Obj,
  queuesFile,
  type quotas,
  type resourceQuota,
} from './queues-schema.js';
import type {
  Resource,
  ResourceQuota,
  SimCohort,
  SimPreemption,
  SimQueue,
  SimQueues,
  SimQuotas,
} from './queues-types.js';

export function parseQueues(text: string, file = '<queues>'): SimQueues {
  const doc = parseDoc(text, file);
  return validateQueues(doc);
}

export function readQueues(path: string): SimQueues {
  return parseQueues(readFileSync(path, 'utf8'), path);
}

/** Copy of a validated quota map in the core's shape (input order; absent limits stay absent). */
function toQuotas(q: z.infer<typeof quotas> | null | undefined): SimQuotas {
  const out: SimQuotas = {};
  for (const [flavor, res] of Object.entries(q ?? {})) {
    const fq: Partial<Record<Resource, ResourceQuota>> = {};
    for (const [r, v] of Object.entries(res) as [Resource, z.infer<typeof resourceQuota> | undefined][]) {
      if (v === undefined) continue;
      const rq: ResourceQuota = { nominal: v.nominal };
      if (v.borrowingLimit !== undefined) rq.borrowingLimit = v.borrowingLimit;
      if (v.lendingLimit !== undefined) rq.lendingLimit = v.lendingLimit;
      fq[r] = rq;
    }
    out[flavor] = fq;
  }
  return out;
}

function validateQueues(doc: Doc): SimQueues {
  const { file } = doc;
  const parsed = queuesFile.safeParse(doc.root, { reportInput: true, error: message });
  if (!parsed.success) throw issueError(doc, parsed.error.issues[0]!);
  const data = parsed.data;
  const root = doc.root as Obj;
  // lines of the list entries (the schema's output is a copy)
  const lineOfEntry = (list: 'cohorts' | 'queues', i: number): number =>
    doc.lineOf((root[list] as Value[])[i]);

  const cohorts: SimCohort[] = [];
  const cohortNames = new Set<string>();
  (data.cohorts ?? []).forEach((c, i) => {
    const line = lineOfEntry('cohorts', i);
    if (cohortNames.has(c.name)) throw new DocError(file, line, `duplicate cohort '${c.name}'`);
    cohortNames.add(c.name);
    const co: SimCohort = { line, name: c.name };
    if (c.parent !== undefined) co.parent = c.parent;
    // `quotas: null` is an empty quota map, as before
    if (c.quotas !== undefined) co.quotas = toQuotas(c.quotas);
    cohorts.push(co);
  });
  for (const co of cohorts) {
    if (co.parent !== undefined && !cohortNames.has(co.parent)) {
      throw new DocError(
        file,
        co.line,
        `cohort '${co.name}': parent '${co.parent}' is not a declared cohort`,
      );
    }
  }
  // cycles
  const parentOf = new Map(cohorts.map((c) => [c.name, c.parent]));
  for (const co of cohorts) {
    const seen = new Set<string>();
    let cur: string | undefined = co.name;
    while (cur !== undefined) {
      if (seen.has(cur))
        throw new DocError(file, co.line, `cohort '${co.name}': its parent chain has a cycle`);
      seen.add(cur);
      cur = parentOf.get(cur);
    }
  }

  const queues: SimQueue[] = [];
  const qNames = new Set<string>();
  data.queues.forEach((q, i) => {
    const line = lineOfEntry('queues', i);
    const what = `queue '${q.name}'`;
    if (qNames.has(q.name)) throw new DocError(file, line, `duplicate queue '${q.name}'`);
    qNames.add(q.name);
    const sq: SimQueue = { line, name: q.name, tenant: q.tenant ?? q.name, quotas: toQuotas(q.quotas) };
    if (q.cohort !== undefined) {
      if (!cohortNames.has(q.cohort))
        throw new DocError(file, line, `${what}: cohort '${q.cohort}' is not declared in 'cohorts'`);
      sq.cohort = q.cohort;
    }
    if (q.weight !== undefined) sq.weight = q.weight;
    if (q.isolation !== undefined) sq.isolation = q.isolation;
    if (q.dedicatedPool !== undefined) sq.dedicatedPool = q.dedicatedPool;
    if (q.isolationPolicy !== undefined) sq.isolationPolicy = q.isolationPolicy;
    if (q.workloadType !== undefined) sq.workloadType = q.workloadType;
    if (q.slaClass !== undefined) sq.slaClass = q.slaClass;
    if (q.tier !== undefined) sq.tier = q.tier;
    if (q.queueingStrategy !== undefined) sq.queueingStrategy = q.queueingStrategy;
    if (q.timeWindows !== undefined)
      sq.timeWindows = q.timeWindows.map((w) => ({
        days: [...w.days],
        start: w.start,
        end: w.end,
        timeZone: w.timeZone,
        quotas: toQuotas(w.quotas),
      }));
    const p = q.preemption;
    if (p !== undefined) {
      const pre: SimPreemption = {};
      if (p.withinQueue !== undefined) pre.withinQueue = p.withinQueue;
      if (p.reclaimWithinCohort !== undefined) pre.reclaimWithinCohort = p.reclaimWithinCohort;
      if (p.minRunBeforeReclaimMs !== undefined) pre.minRunBeforeReclaimMs = p.minRunBeforeReclaimMs;
      if (p.fairShareMaxLostRunMs !== undefined) pre.fairShareMaxLostRunMs = p.fairShareMaxLostRunMs;
      const bw = p.borrowWithinCohort;
      if (bw !== undefined) {
        pre.borrowWithinCohort = { policy: bw.policy ?? 'Never' };
        if (bw.maxPriorityThreshold !== undefined)
          pre.borrowWithinCohort.maxPriorityThreshold = bw.maxPriorityThreshold;
      }
      sq.preemption = pre;
    }
    queues.push(sq);
  });
  const out: SimQueues = { file, cohorts, queues };
  const fs = data.fairSharing;
  if (fs !== undefined) {
    out.fairSharing = {};
    if (fs.usageHalfLifeMs !== undefined) out.fairSharing.usageHalfLifeMs = fs.usageHalfLifeMs;
    if (fs.entryPenalty !== undefined) out.fairSharing.entryPenalty = fs.entryPenalty;
  }
  return out;
}

/** Check that every flavor a queue names exists in the cluster. */
export function checkQueuesAgainstCluster(q: SimQueues, c: SimCluster): void {
  const flavors = new Set(c.flavors.map((f) => f.name));
  const check = (quotas: SimQuotas | undefined, line: number, what: string): void => {
    for (const f of Object.keys(quotas ?? {})) {
      if (!flavors.has(f))
        throw new DocError(
          q.file,
          line,
          `${what}: flavor '${f}' is not in the cluster (flavors: ${[...flavors].join(', ')})`,
        );
    }
  };
  for (const co of q.cohorts) check(co.quotas, co.line, `cohort '${co.name}'`);
  for (const qu of q.queues) {
    check(qu.quotas, qu.line, `queue '${qu.name}'`);
    (qu.timeWindows ?? []).forEach((w, i) =>
      check(w.quotas, qu.line, `queue '${qu.name}' timeWindows[${i}]`),
    );
  }
}
