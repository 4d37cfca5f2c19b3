import { readFileSync } from 'node:fs';
import type { PreemptionSpec, QuotaLimits, QuotaSpec, ResourceName } from '../core/index.js';
import type { SimCluster } from './cluster.js';
import { DocError, parseDoc, type Doc, type Value } from './doc.js';

export type Resource = ResourceName;
export const RESOURCES: readonly Resource[] = ['gpu', 'cpu', 'memory'];
export type ResourceQuota = QuotaLimits;
/** flavor → resource → quota, as the core takes it. */
export type SimQuotas = QuotaSpec;
export type SimPreemption = PreemptionSpec;

export interface SimQueue {
  line: number;
  name: string;
  tenant: string;
  cohort?: string;
  quotas: SimQuotas;
  weight?: number;
  queueingStrategy?: 'StrictFIFO' | 'BestEffortFIFO';
  preemption?: SimPreemption;
  isolation?: 'DEDICATED' | 'GUARANTEED' | 'ELASTIC' | 'BEST_EFFORT';
  /** Jobs of this queue run only on nodes of this pool. */
  dedicatedPool?: string;
}

export interface SimCohort {
  line: number;
  name: string;
  parent?: string;
  quotas?: SimQuotas;
}

export interface SimQueues {
  file: string;
  cohorts: SimCohort[];
  queues: SimQueue[];
  /** Fair-sharing options for the `fairway` policy. */
  fairSharing?: { usageHalfLifeMs?: number; entryPenalty?: number };
}

type Obj = { [k: string]: Value };
const isObj = (v: Value | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export function parseQueues(text: string, file = '<queues>'): SimQueues {
  const doc = parseDoc(text, file);
  return validateQueues(doc);
}

export function readQueues(path: string): SimQueues {
  return parseQueues(readFileSync(path, 'utf8'), path);
}

function validateQueues(doc: Doc): SimQueues {
  const { file } = doc;
  const root = doc.root;
  const fail = (at: unknown, m: string): never => {
    throw new DocError(file, doc.lineOf(at), m);
  };
  if (!isObj(root)) return fail(root, 'the queues file must be an object with a `queues` list');
  const known = new Set(['cohorts', 'queues', 'fairSharing']);
  for (const k of Object.keys(root)) if (!known.has(k)) fail(root, `unknown top-level key '${k}' (known: ${[...known].join(', ')})`);

  const num = (parent: Obj, key: string, what: string, opts: { min?: number; optional?: boolean } = {}): number | undefined => {
    const v = parent[key];
    if (v === undefined || v === null) {
      if (opts.optional) return undefined;
      return fail(parent, `${what}: '${key}' is required`);
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(parent, `${what}: '${key}' must be a number, got ${JSON.stringify(v)}`);
    if (opts.min !== undefined && v < opts.min) return fail(parent, `${what}: '${key}' must be ≥ ${opts.min}, got ${v}`);
    return v;
  };
  const str = (parent: Obj, key: string, what: string, optional = false): string | undefined => {
    const v = parent[key];
    if (v === undefined || v === null) {
      if (optional) return undefined;
      return fail(parent, `${what}: '${key}' is required`);
    }
    if (typeof v !== 'string' || v === '') return fail(parent, `${what}: '${key}' must be a non-empty string`);
    return v;
  };
  const oneOf = <T extends string>(parent: Obj, key: string, what: string, allowed: readonly T[]): T | undefined => {
    const v = str(parent, key, what, true);
    if (v === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(v)) return fail(parent, `${what}: '${key}' must be one of ${allowed.join(', ')}, got '${v}'`);
    return v as T;
  };
  const quotas = (v: Value | undefined, holder: Obj, what: string): SimQuotas => {
    if (v === undefined || v === null) return {};
    if (!isObj(v)) return fail(holder, `${what}: 'quotas' must map flavor → resource → quota`);
    const out: SimQuotas = {};
    for (const [flavor, res] of Object.entries(v)) {
      if (!isObj(res)) return fail(v, `${what}: quotas.${flavor} must map resource (gpu, cpu, memory) → quota`);
      const fq: Partial<Record<Resource, ResourceQuota>> = {};
      for (const [r, q] of Object.entries(res)) {
        if (!(RESOURCES as readonly string[]).includes(r)) fail(res, `${what}: quotas.${flavor}: unknown resource '${r}' (gpu, cpu, memory)`);
        const w = `${what}: quotas.${flavor}.${r}`;
        let rq: ResourceQuota;
        if (typeof q === 'number') {
          if (!(q >= 0)) fail(res, `${w} must be ≥ 0`);
          rq = { nominal: q };
        } else if (isObj(q)) {
          for (const k of Object.keys(q)) {
            if (!['nominal', 'borrowingLimit', 'lendingLimit'].includes(k)) fail(q, `${w}: unknown key '${k}' (nominal, borrowingLimit, lendingLimit)`);
          }
          rq = { nominal: num(q, 'nominal', w, { min: 0 })! };
          const b = num(q, 'borrowingLimit', w, { min: 0, optional: true });
          if (b !== undefined) rq.borrowingLimit = b;
          const l = num(q, 'lendingLimit', w, { min: 0, optional: true });
          if (l !== undefined) {
            if (l > rq.nominal) fail(q, `${w}: lendingLimit ${l} exceeds nominal ${rq.nominal}`);
            rq.lendingLimit = l;
          }
        } else {
          return fail(res, `${w} must be a number (nominal) or {nominal, borrowingLimit?, lendingLimit?}`);
        }
        fq[r as Resource] = rq;
      }
      out[flavor] = fq;
    }
    return out;
  };

  const cohorts: SimCohort[] = [];
  const cohortNames = new Set<string>();
  const cs = root['cohorts'];
  if (cs !== undefined && cs !== null) {
    if (!Array.isArray(cs)) fail(root, "'cohorts' must be a list");
    for (const c of cs as Value[]) {
      if (!isObj(c)) return fail(cs, 'each cohort must be an object with a name');
      const name = str(c, 'name', 'cohort')!;
      const what = `cohort '${name}'`;
      if (cohortNames.has(name)) fail(c, `duplicate cohort '${name}'`);
      cohortNames.add(name);
      const co: SimCohort = { line: doc.lineOf(c), name };
      const parent = str(c, 'parent', what, true);
      if (parent !== undefined) co.parent = parent;
      if (c['quotas'] !== undefined) co.quotas = quotas(c['quotas'], c, what);
      cohorts.push(co);
    }
  }
  for (const co of cohorts) {
    if (co.parent !== undefined && !cohortNames.has(co.parent)) {
      throw new DocError(file, co.line, `cohort '${co.name}': parent '${co.parent}' is not a declared cohort`);
    }
  }
  // cycles
  const parentOf = new Map(cohorts.map((c) => [c.name, c.parent]));
  for (const co of cohorts) {
    const seen = new Set<string>();
    let cur: string | undefined = co.name;
    while (cur !== undefined) {
      if (seen.has(cur)) throw new DocError(file, co.line, `cohort '${co.name}': its parent chain has a cycle`);
      seen.add(cur);
      cur = parentOf.get(cur);
    }
  }

  const qs = root['queues'];
  if (!Array.isArray(qs) || qs.length === 0) return fail(root, "'queues' must be a non-empty list");
  const queues: SimQueue[] = [];
  const qNames = new Set<string>();
  const qKeys = new Set(['name', 'tenant', 'cohort', 'quotas', 'weight', 'queueingStrategy', 'preemption', 'isolation', 'dedicatedPool']);
  for (const q of qs) {
    if (!isObj(q)) return fail(qs, 'each queue must be an object');
    const name = str(q, 'name', 'queue')!;
    const what = `queue '${name}'`;
    if (q['timeWindows'] !== undefined) fail(q, `${what}: 'timeWindows' is not supported by the simulator yet (the virtual clock only stops at submits and finishes)`);
    for (const k of Object.keys(q)) if (!qKeys.has(k)) fail(q, `${what}: unknown key '${k}' (known: ${[...qKeys].join(', ')})`);
    if (qNames.has(name)) fail(q, `duplicate queue '${name}'`);
    qNames.add(name);
    const sq: SimQueue = { line: doc.lineOf(q), name, tenant: str(q, 'tenant', what, true) ?? name, quotas: quotas(q['quotas'], q, what) };
    const cohort = str(q, 'cohort', what, true);
    if (cohort !== undefined) {
      if (!cohortNames.has(cohort)) fail(q, `${what}: cohort '${cohort}' is not declared in 'cohorts'`);
      sq.cohort = cohort;
    }
    const w = num(q, 'weight', what, { min: 0, optional: true });
    if (w !== undefined) sq.weight = w;
    const iso = oneOf(q, 'isolation', what, ['DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT'] as const);
    if (iso !== undefined) sq.isolation = iso;
    const dp = str(q, 'dedicatedPool', what, true);
    if (dp !== undefined) sq.dedicatedPool = dp;
    const qsName = oneOf(q, 'queueingStrategy', what, ['StrictFIFO', 'BestEffortFIFO'] as const);
    if (qsName !== undefined) sq.queueingStrategy = qsName;
    const p = q['preemption'];
    if (p !== undefined && p !== null) {
      if (!isObj(p)) return fail(q, `${what}: 'preemption' must be an object`);
      const pre: SimPreemption = {};
      const wq = oneOf(p, 'withinQueue', `${what} preemption`, ['Never', 'LowerPriority', 'LowerOrNewerEqualPriority'] as const);
      if (wq !== undefined) pre.withinQueue = wq;
      const rc = oneOf(p, 'reclaimWithinCohort', `${what} preemption`, ['Never', 'LowerPriority', 'Any'] as const);
      if (rc !== undefined) pre.reclaimWithinCohort = rc;
      const bw = p['borrowWithinCohort'];
      if (bw !== undefined && bw !== null) {
        if (!isObj(bw)) return fail(p, `${what}: preemption.borrowWithinCohort must be an object`);
        const pol = oneOf(bw, 'policy', `${what} borrowWithinCohort`, ['Never', 'LowerPriority'] as const) ?? 'Never';
        pre.borrowWithinCohort = { policy: pol };
        const th = num(bw, 'maxPriorityThreshold', `${what} borrowWithinCohort`, { optional: true });
        if (th !== undefined) pre.borrowWithinCohort.maxPriorityThreshold = th;
      }
      sq.preemption = pre;
    }
    queues.push(sq);
  }
  const out: SimQueues = { file, cohorts, queues };
  const fs = root['fairSharing'];
  if (fs !== undefined && fs !== null) {
    if (!isObj(fs)) return fail(root, "'fairSharing' must be an object");
    out.fairSharing = {};
    const hl = num(fs, 'usageHalfLifeMs', 'fairSharing', { min: 0, optional: true });
    if (hl !== undefined) out.fairSharing.usageHalfLifeMs = hl;
    const ep = num(fs, 'entryPenalty', 'fairSharing', { min: 0, optional: true });
    if (ep !== undefined) out.fairSharing.entryPenalty = ep;
  }
  return out;
}

/** Check that every flavor a queue names exists in the cluster. */
export function checkQueuesAgainstCluster(q: SimQueues, c: SimCluster): void {
  const flavors = new Set(c.flavors.map((f) => f.name));
  const check = (quotas: SimQuotas | undefined, line: number, what: string): void => {
    for (const f of Object.keys(quotas ?? {})) {
      if (!flavors.has(f)) throw new DocError(q.file, line, `${what}: flavor '${f}' is not in the cluster (flavors: ${[...flavors].join(', ')})`);
    }
  };
  for (const co of q.cohorts) check(co.quotas, co.line, `cohort '${co.name}'`);
  for (const qu of q.queues) check(qu.quotas, qu.line, `queue '${qu.name}'`);
}

/** Nominal GPU quota of a queue summed over flavors. */
export function nominalGpus(q: SimQueue): number {
  let s = 0;
  for (const f of Object.values(q.quotas)) s += f.gpu?.nominal ?? 0;
  return s;
}
