// The queues file's shape as zod schemas, and a schema issue as a DocError (queues-parse.ts runs them).
// Messages are short ("must be ≥ 0, got -1"): the error adds the file, the line of the object holding the
// value and the value's path.
import { z } from 'zod';
import { SLA_CLASSES, WORKLOAD_TYPES } from '../core/governance/index.js';
import { parseClock } from '../core/scheduling/index.js';
import { type Doc, DocError, type Value } from './doc.js';
import { RESOURCES, type Resource } from './queues-types.js';

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

export const resourceQuota = z.preprocess(
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
export const quotas = z.record(
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
export const queuesFile = z.strictObject(
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
export const message: z.core.$ZodErrorMap = (iss) => {
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

export type Obj = { [k: string]: Value };
const isObj = (v: Value | undefined): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first schema issue as a DocError: line of the object holding the value (or, for unknown keys, of the
 * object itself).
 */
export function issueError(doc: Doc, iss: z.core.$ZodIssue): DocError {
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
