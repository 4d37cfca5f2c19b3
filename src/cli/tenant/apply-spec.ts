// `fairway apply`: the platform file (YAML) parsed and validated before anything is sent.
// Field names are the GraphQL inputs' names (camelCase) so a reader maps them 1:1; where an
// input takes an ID (cohortId, parentId, tenantId, dedicatedTenantId) the file names the object
// instead (cohort, parent, dedicatedTenant) — the CLI looks the ID up.
import fs from 'node:fs';
import { type Document, isMap, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { CliError, EXIT } from './context.js';

// The server's own rules (schema/cluster/cluster.ts, schema/common.ts, schema/cluster/queue-mutations.ts), checked here
// too so that a bad name stops the run before anything is sent.
const objectName = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/, 'use 1-63 lowercase letters, digits, dots and dashes');
const slug = z
  .string()
  .regex(
    /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/,
    'use 1-63 lowercase letters, digits and dashes, starting and ending with a letter or digit',
  );
const amount = z.number().min(0, 'must not be negative');
const int = z.number().int();

const quota = z.strictObject({
  flavor: z.string().min(1),
  resource: z.enum(['GPU', 'CPU', 'MEMORY']).default('GPU'),
  nominal: amount,
  borrowingLimit: amount.optional(),
  lendingLimit: amount.optional(),
});

const flavor = z.strictObject({
  name: objectName,
  kind: z.enum(['GPU', 'MIG', 'TIMESLICE']),
  gpuModel: z.string().min(1).optional(),
  slicesPerGpu: int.positive().optional(),
  pricePerUnitHour: amount,
});

const priorityClass = z.strictObject({
  name: z.string().min(1).max(63),
  /** CreatePriorityClassInput.value: higher goes first and may preempt lower. Needed to create the class. */
  value: z.number().int().min(-1_000_000_000).max(1_000_000_000).optional(),
  /** CreatePriorityClassInput.preemptible. Needed to create the class. */
  preemptible: z.enum(['YES', 'NO', 'RECLAIM_ONLY']).optional(),
  description: z.string().max(200).optional(),
  requiresGrant: z.boolean().optional(),
  /** SetPriceMultiplierInput.multiplier: the class's multiplier on flavor prices. */
  multiplier: z.number().positive().optional(),
});

const cohort = z.strictObject({
  name: objectName,
  /** CreateCohortInput.parentId, by name. */
  parent: objectName.optional(),
  quotas: z.array(quota).optional(),
});

const nodePool = z.strictObject({
  name: objectName,
  /** CreateNodePoolInput.dedicatedTenantId, by slug. */
  dedicatedTenant: slug.optional(),
  nodes: z.array(
    z.strictObject({
      name: z.string().min(1),
      flavor: z.string().min(1),
      gpus: int.min(0),
      cpuMillis: int.min(0),
      memoryMiB: int.min(0),
    }),
  ),
});

const preemption = z.strictObject({
  withinQueue: z.enum(['NEVER', 'LOWER_PRIORITY', 'LOWER_OR_NEWER_EQUAL_PRIORITY']).optional(),
  reclaimWithinCohort: z.enum(['NEVER', 'LOWER_PRIORITY', 'ANY']).optional(),
  borrowWithinCohort: z.boolean().optional(),
  borrowWithinCohortMaxPriority: int.optional(),
  minRunBeforeReclaimSeconds: int.min(0).optional(),
  fairShareMaxLostRunSeconds: int.min(0).optional(),
});

const timeWindow = z.strictObject({
  days: z.array(int),
  start: z.string(),
  end: z.string(),
  timeZone: z.string(),
  quotas: z.array(quota),
});

const isolationLevel = z.enum(['BEST_EFFORT', 'DEDICATED', 'ELASTIC', 'GUARANTEED']);

const queue = z.strictObject({
  name: slug,
  /** CreateQueueInput.cohortId, by name; null: no cohort. */
  cohort: objectName.nullable().optional(),
  quotas: z.array(quota),
  weight: z.number().min(0).max(1000).optional(),
  queueingStrategy: z.enum(['BEST_EFFORT_FIFO', 'STRICT_FIFO']).optional(),
  isolationLevel: isolationLevel.nullable().optional(),
  // The next three cannot be read back through the API: sent when the queue is created only.
  preemption: preemption.optional(),
  timeWindows: z.array(timeWindow).optional(),
  dedicatedPool: z.string().min(1).optional(),
});

const boundaryList = z.array(z.string().min(1)).nullable().optional();

const tenant = z.strictObject({
  slug,
  name: z.string().trim().min(1).max(200),
  tier: z.enum(['STANDARD', 'PREMIUM', 'ENTERPRISE']).optional(),
  isolationLevel: isolationLevel.optional(),
  status: z.enum(['ACTIVE', 'SUSPENDED', 'ARCHIVED']).optional(),
  /** CreateTenantInput.adminEmail: the first admin, at creation only (platform admins cannot read members'
   * e-mails).
   */
  adminEmail: z.email().optional(),
  grantedPriorityClasses: z.array(z.string().min(1).max(63)).optional(),
  /** setTenantDataBoundaries; null: unrestricted. */
  dataBoundaries: z
    .strictObject({
      imageRegistries: boundaryList,
      datasetLocations: boundaryList,
      artifactStores: boundaryList,
    })
    .nullable()
    .optional(),
  /** setTenantEgressAllowlist; null: unrestricted. */
  egressAllowlist: z.array(z.string().min(1)).nullable().optional(),
  queues: z.array(queue).default([]),
});

const platform = z
  .strictObject({
    flavors: z.array(flavor).default([]),
    priorityClasses: z.array(priorityClass).default([]),
    cohorts: z.array(cohort).default([]),
    tenants: z.array(tenant).default([]),
    nodePools: z.array(nodePool).default([]),
  })
  .superRefine((p, ctx) => {
    const unique = (
      list: { name?: string; slug?: string }[],
      key: 'name' | 'slug',
      at: string,
      what: string,
    ) => {
      const seen = new Set<string>();
      list.forEach((item, i) => {
        const value = item[key]!;
        if (seen.has(value))
          ctx.addIssue({
            code: 'custom',
            path: [at, i, key],
            message: `${what} "${value}" is declared twice`,
          });
        seen.add(value);
      });
    };
    unique(p.flavors, 'name', 'flavors', 'flavor');
    unique(p.priorityClasses, 'name', 'priorityClasses', 'priority class');
    unique(p.cohorts, 'name', 'cohorts', 'cohort');
    unique(p.tenants, 'slug', 'tenants', 'tenant');
    unique(p.nodePools, 'name', 'nodePools', 'node pool');
    // Queue names are unique across the platform, not per tenant.
    const queues = new Set<string>();
    p.tenants.forEach((t, ti) =>
      t.queues.forEach((q, qi) => {
        if (queues.has(q.name))
          ctx.addIssue({
            code: 'custom',
            path: ['tenants', ti, 'queues', qi, 'name'],
            message: `queue "${q.name}" is declared twice`,
          });
        queues.add(q.name);
      }),
    );
    p.cohorts.forEach((c, i) => {
      if (c.parent === c.name)
        ctx.addIssue({
          code: 'custom',
          path: ['cohorts', i, 'parent'],
          message: 'a cohort cannot be its own parent',
        });
    });
  });

export type PlatformSpec = z.infer<typeof platform>;
export type QuotaSpec = z.infer<typeof quota>;
export type FlavorSpec = z.infer<typeof flavor>;
export type CohortSpec = z.infer<typeof cohort>;
export type TenantSpec = z.infer<typeof tenant>;
export type QueueSpec = z.infer<typeof queue>;
export type NodePoolSpec = z.infer<typeof nodePool>;
export type PriorityClassSpec = z.infer<typeof priorityClass>;

/** Reads and validates a platform file (`-` is stdin); any problem is a CliError (USAGE) naming file:line. */
export async function readPlatformSpec(
  file: string,
  stdin: NodeJS.ReadableStream = process.stdin,
): Promise<PlatformSpec> {
  let text: string;
  try {
    if (file === '-') {
      const chunks: Buffer[] = [];
      for await (const chunk of stdin) chunks.push(Buffer.from(chunk as Buffer));
      text = Buffer.concat(chunks).toString('utf8');
    } else text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`, EXIT.USAGE);
  }
  return parsePlatformSpec(text, file === '-' ? '<stdin>' : file);
}

export function parsePlatformSpec(text: string, file: string): PlatformSpec {
  const lineCounter = new LineCounter();
  // uniqueKeys: a key given twice is an error, not a silent override.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  const at = (offset: number | undefined) =>
    offset === undefined ? file : `${file}:${lineCounter.linePos(offset).line}`;
  if (doc.errors.length) {
    const e = doc.errors[0]!;
    throw new CliError(`${at(e.pos[0])}: ${e.message.split('\n')[0]}`, EXIT.USAGE);
  }
  const parsed = platform.safeParse(doc.toJS() ?? {});
  if (parsed.success) {
    for (const t of parsed.data.tenants)
      if (t.egressAllowlist) t.egressAllowlist = t.egressAllowlist.map(canonicalCidr);
    return parsed.data;
  }
  const lines = parsed.error.issues.slice(0, 10).map((issue) => {
    const path = issue.path as (string | number)[];
    const where = at(offsetOf(doc, path, issue.code === 'unrecognized_keys' ? issue.keys[0] : undefined));
    const label = path.length ? path.join('.') : '(top level)';
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
        : issue.message;
    return `${where}: ${label}: ${message}`;
  });
  throw new CliError(lines.join('\n'), EXIT.USAGE);
}

/** Where in the text the issue's node (or one of its keys) starts; the nearest existing parent otherwise. */
function offsetOf(doc: Document, path: (string | number)[], key: string | undefined): number | undefined {
  for (let n = path.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true);
    if (!node || typeof node !== 'object' || !('range' in node)) continue;
    if (key !== undefined && n === path.length && isMap(node)) {
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === key);
      const keyRange = (pair?.key as { range?: [number, number, number] } | null)?.range;
      if (keyRange) return keyRange[0];
    }
    const range = (node as { range?: [number, number, number] | null }).range;
    if (range) return range[0];
  }
  return undefined;
}

/**
 * The server stores allowlist entries canonically (a bare address is one host); the file is
 * compared in the same form so that `10.0.0.1` does not show as a change on every run.
 * Invalid entries are left alone: the server's BAD_USER_INPUT names them.
 */
export function canonicalCidr(entry: string): string {
  const text = entry.trim();
  const [address = '', prefix] = text.split('/');
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(address)) return `${address}/${prefix ?? 32}`;
  if (address.includes(':')) {
    try {
      return `${new URL(`http://[${address}]/`).hostname.slice(1, -1)}/${prefix ?? 128}`;
    } catch {
      return text;
    }
  }
  return text;
}
