import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { SLA_CLASSES, type SlaClass, WORKLOAD_TYPES, type WorkloadType } from '../core/governance/index.js';
import type {
  PreemptionSpec,
  QuotaLimits,
  QuotaSpec,
  ResourceName,
  TimeWindowSpec,
} from '../core/scheduling/index.js';
import { parseClock, windowOpen } from '../core/scheduling/index.js';
import type { SimCluster } from './cluster.js';
import { type Doc, DocError, parseDoc, type Value } from './doc.js';

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
  /** Time-window quotas, as the core's QueueSpec.timeWindows (the first open window's quotas lie over `quotas`). */
  timeWindows?: SimTimeWindow[];
  /** Governance (used by the governed and controller policies): a queue naming any of these three is
   * governed.
   */
  isolationPolicy?: string;
  workloadType?: WorkloadType;
  slaClass?: SlaClass;
  /** The tenant's tier the policy rules read (default STANDARD). */
  tier?: string;
}

export type SimTimeWindow = TimeWindowSpec;

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

// ---------------------------------------------------------------- schema
// The file's shape as zod schemas. Messages are short ("must be ≥ 0, got -1"): the error
// adds the file, the line of the object holding the value and the value's path.

/** An optional value: null counts as absent, as it always did in these files. */
const optional = <T extends z.ZodType>(s: T) =>
  z.preprocess((v) => (v === null ? undefined : v), s.optional());
/** A required value that may not be null either. */
const required = <T extends z.ZodType>(s: T) => z.preprocess((v) => (v === null ? undefined : v), s);
const nonEmpty = z.string().min(1);
/** An object with only the listed keys; unknown ones are named with the known ones. */
const strict = <S extends z.ZodRawShape>(shape: S, notAnObject?: string) =>
  z.strictObject(shape, {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown key ${quoteList(iss.keys)} (known: ${Object.keys(shape).join(', ')})`
        : iss.code === 'invalid_type' && iss.input !== undefined
          ? notAnObject
          : undefined,
  });
const quoteList = (keys: readonly PropertyKey[]): string => keys.map((k) => `'${String(k)}'`).join(', ');

const resourceQuota = z.preprocess(
  (v) => (typeof v === 'number' ? { nominal: v } : v), // a number is the nominal
  strict(
    {
      nominal: required(z.number().min(0)),
      borrowingLimit: optional(z.number().min(0)),
      lendingLimit: optional(z.number().min(0)),
    },
    'must be a number (nominal) or {nominal, borrowingLimit?, lendingLimit?}',
  ).check((ctx) => {
    const q = ctx.value;
    if (q.lendingLimit !== undefined && q.lendingLimit > q.nominal) {
      ctx.issues.push({
        code: 'custom',
        input: q,
        path: ['lendingLimit'],
        message: `${q.lendingLimit} exceeds nominal ${q.nominal}`,
      });
    }
  }),
);
const quotas = z.record(
  z.string(),
  z.partialRecord(z.enum(RESOURCES as [Resource, ...Resource[]]), resourceQuota, {
    error: (raw) => {
      // a partial record reports keys outside the enum as unrecognized_keys, which its types omit
      const iss = raw as { code: string; keys?: PropertyKey[] };
      if (iss.code === 'unrecognized_keys')
        return `unknown resource ${quoteList(iss.keys ?? [])} (gpu, cpu, memory)`;
      return iss.code === 'invalid_type' ? 'must map resource (gpu, cpu, memory) → quota' : undefined;
    },
  }),
  { error: (iss) => (iss.code === 'invalid_type' ? 'must map flavor → resource → quota' : undefined) },
);
const cohort = strict({ name: required(nonEmpty), parent: optional(nonEmpty), quotas: quotas.nullish() });
const preemption = strict({
  withinQueue: optional(z.enum(['Never', 'LowerPriority', 'LowerOrNewerEqualPriority'])),
  reclaimWithinCohort: optional(z.enum(['Never', 'LowerPriority', 'Any'])),
  borrowWithinCohort: optional(
    strict({
      policy: optional(z.enum(['Never', 'LowerPriority'])),
      maxPriorityThreshold: optional(z.number()),
    }),
  ),
  minRunBeforeReclaimMs: optional(z.number().min(0)),
  fairShareMaxLostRunMs: optional(z.number().min(0)),
});
/** 'HH:MM' as the core reads it (00:00..24:00). */
const clockTime = z.string().check((ctx) => {
  try {
    parseClock(ctx.value);
  } catch {
    ctx.issues.push({
      code: 'custom',
      input: ctx.value,
      message: `must be a time 'HH:MM' (00:00..24:00), got '${ctx.value}'`,
    });
  }
});
const timeZone = z.string().check((ctx) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: ctx.value });
  } catch {
    ctx.issues.push({
      code: 'custom',
      input: ctx.value,
      message: `'${ctx.value}' is not an IANA time zone (e.g. Europe/Berlin, UTC)`,
    });
  }
});
const timeWindow = strict({
  days: required(z.array(z.number().int().min(0).max(6))),
  start: required(clockTime),
  end: required(clockTime),
  timeZone: required(timeZone),
  quotas: required(quotas),
});
const queue = strict({
  name: required(nonEmpty),
  tenant: optional(nonEmpty),
  cohort: optional(nonEmpty),
  quotas: optional(quotas),
  weight: optional(z.number().min(0)),
  queueingStrategy: optional(z.enum(['StrictFIFO', 'BestEffortFIFO'])),
  preemption: optional(preemption),
  isolation: optional(z.enum(['DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT'])),
  timeWindows: optional(z.array(timeWindow)),
  isolationPolicy: optional(z.enum(['dedicated', 'guaranteed', 'elastic', 'best-effort'])),
  workloadType: optional(z.enum(WORKLOAD_TYPES)),
  slaClass: optional(z.enum(SLA_CLASSES)),
  tier: optional(nonEmpty),
  dedicatedPool: optional(nonEmpty),
});
const queuesFile = z.strictObject(
  {
    cohorts: optional(z.array(cohort)),
    queues: z.array(queue).min(1),
    fairSharing: optional(
      strict({ usageHalfLifeMs: optional(z.number().min(0)), entryPenalty: optional(z.number().min(0)) }),
    ),
  },
  {
    error: (iss) =>
      iss.code === 'unrecognized_keys'
        ? `unknown top-level key ${quoteList(iss.keys)} (known: cohorts, queues, fairSharing)`
        : iss.code === 'invalid_type'
          ? 'the queues file must be an object with a `queues` list'
          : undefined,
  },
);

/** Messages for what the schemas above do not word themselves. */
const message: z.core.$ZodErrorMap = (iss) => {
  const got = (v: unknown): string => (typeof v === 'string' ? `'${v}'` : JSON.stringify(v));
  switch (iss.code) {
    case 'invalid_type': {
      if (iss.input === undefined) return 'is required';
      const a =
        iss.expected === 'array' ? 'a list' : iss.expected === 'object' ? 'an object' : `a ${iss.expected}`;
      return `must be ${a}, got ${got(iss.input)}`;
    }
    case 'too_small':
      if (iss.origin === 'string') return 'must be a non-empty string';
      if (iss.origin === 'array') return 'must be a non-empty list';
      return `must be ≥ ${String(iss.minimum)}, got ${got(iss.input)}`;
    case 'invalid_value':
      return `must be one of ${iss.values.map(String).join(', ')}, got ${got(iss.input)}`;
    default:
      return undefined;
  }
};

/** `queues[2].quotas.h100.gpu` */
function formatPath(path: readonly PropertyKey[]): string {
  let s = '';
  for (const k of path) {
    if (typeof k === 'number') s += `[${k}]`;
    else if (/^[\w-]+$/.test(String(k))) s += `${s === '' ? '' : '.'}${String(k)}`;
    else s += `[${JSON.stringify(String(k))}]`;
  }
  return s;
}

type Obj = { [k: string]: Value };
const isObj = (v: Value | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first schema issue as a DocError: line of the object holding the value (or, for unknown keys, of the
 * object itself).
 */
function issueError(doc: Doc, iss: z.core.$ZodIssue): DocError {
  const holderDepth = iss.code === 'unrecognized_keys' ? iss.path.length : iss.path.length - 1;
  let holder: Value = doc.root;
  let cur: Value | undefined = doc.root;
  for (const k of iss.path.slice(0, holderDepth)) {
    cur = Array.isArray(cur) ? cur[k as number] : isObj(cur) ? cur[String(k)] : undefined;
    if (cur === undefined || cur === null || typeof cur !== 'object') break;
    holder = cur;
  }
  // name the queue or cohort too: an index is hard to find in a long file
  const [list, i] = iss.path;
  const entry =
    (list === 'queues' || list === 'cohorts') &&
    typeof i === 'number' &&
    isObj(doc.root) &&
    Array.isArray(doc.root[list])
      ? doc.root[list][i]
      : undefined;
  const named =
    isObj(entry) && typeof entry.name === 'string' && entry.name !== ''
      ? ` (${list === 'queues' ? 'queue' : 'cohort'} '${entry.name}')`
      : '';
  const path = formatPath(iss.path);
  return new DocError(
    doc.file,
    doc.lineOf(holder),
    `${path === '' ? '' : `${path}: `}${iss.message}${named}`,
  );
}

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

/**
 * The queue's quotas at instant `at`: its base quotas with the first open time window's laid over
 * them (flavors/resources the window does not name keep their base values) — the core's rule.
 * The queue itself when it has no window.
 */
export function queueAt(q: SimQueue, at: number): SimQueue {
  if (!q.timeWindows || q.timeWindows.length === 0) return q;
  const w = q.timeWindows.find((x) => windowOpen(x, at));
  if (!w) return q;
  const quotas: SimQuotas = {};
  for (const [f, res] of Object.entries(q.quotas)) quotas[f] = { ...res };
  for (const [f, res] of Object.entries(w.quotas)) quotas[f] = { ...(quotas[f] ?? {}), ...res };
  return { ...q, quotas };
}

/**
 * The windows as a policy passes them to the core: as written (`fairway`), or with the static
 * policy's rule applied to their quotas too (borrowingLimit 0 on every declared resource:
 * the queue keeps exactly the nominal its schedule gives it). Undefined without windows.
 */
export function coreTimeWindows(q: SimQueue, noBorrowing: boolean): TimeWindowSpec[] | undefined {
  if (!q.timeWindows || q.timeWindows.length === 0) return undefined;
  return q.timeWindows.map((w) => {
    if (!noBorrowing) return { ...w, days: [...w.days], quotas: w.quotas };
    const quotas: SimQuotas = {};
    for (const [f, res] of Object.entries(w.quotas)) {
      const fq: SimQuotas[string] = {};
      for (const [r, lim] of Object.entries(res) as [Resource, ResourceQuota | undefined][])
        if (lim) fq[r] = { nominal: lim.nominal, borrowingLimit: 0 };
      quotas[f] = fq;
    }
    return { ...w, days: [...w.days], quotas };
  });
}

/** Nominal GPU quota of a queue summed over flavors. */
export function nominalGpus(q: SimQueue): number {
  let s = 0;
  for (const f of Object.values(q.quotas)) s += f.gpu?.nominal ?? 0;
  return s;
}
