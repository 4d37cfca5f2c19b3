// The job file's format, pure (yaml and zod only: no node: imports, no CLI context), so that the CLI
// (job-file.ts, submit.ts) and the web console's YAML editor accept exactly the same files: the same
// fields, the same checks and line numbers, the same names resolved the same way, the same input sent
// and the same idempotency key derived from the content.
import { type Document, isMap, isScalar, LineCounter, parseDocument, type YAMLMap } from 'yaml';
import { z } from 'zod';

const name = z.string().trim().min(1);
const count = z.int().positive();
const nonNegativeInt = z.int().nonnegative();

const PodSet = z.strictObject({
  name: name.optional(),
  count: count.optional(),
  minCount: count.optional(),
  gpusPerPod: z.number().nonnegative().optional(),
  cpuMillisPerPod: nonNegativeInt.optional(),
  memoryMiBPerPod: nonNegativeInt.optional(),
  flavors: z.array(name).min(1).optional(),
});

const EnvVar = z.strictObject({ name, value: z.string() });

const Container = z.strictObject({
  image: name,
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  /** A map (EPOCHS: 3) or the graph's list of {name, value}. */
  env: z
    .union([z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])), z.array(EnvVar)])
    .optional(),
  datasets: z
    .array(z.strictObject({ location: name, mountPath: name, readOnly: z.boolean().optional() }))
    .optional(),
  artifactStore: name.optional(),
  securityContext: z
    .strictObject({
      runAsUser: z.int().optional(),
      runAsGroup: z.int().optional(),
      runAsNonRoot: z.boolean().optional(),
      privileged: z.boolean().optional(),
      allowPrivilegeEscalation: z.boolean().optional(),
      addCapabilities: z.array(z.string()).optional(),
    })
    .optional(),
});

/** Where a file's job or service goes: tenant, project and queue by name or ID. */
export const TargetFields = {
  /** Tenant slug, when the caller belongs to several. */
  tenant: name.optional(),
  /** Project slug (default: the tenant's default project) or a Project ID in projectId. */
  project: name.optional(),
  projectId: name.optional(),
  /** Queue name (default: the project's queue) or a Queue ID in queueId. */
  queue: name.optional(),
  queueId: name.optional(),
};

export const JobFileSchema = z.strictObject({
  name,
  ...TargetFields,
  priorityClass: name.optional(),
  expectedDurationSeconds: z.number().positive().optional(),
  maxRunSeconds: z.number().positive().optional(),
  /** How the job saves progress: a preemption then loses only the work since its last checkpoint (none when
   * resumable).
   */
  checkpoint: z
    .strictObject({
      intervalSeconds: z
        .int()
        .positive()
        .max(90 * 86_400, 'at most 90 days')
        .optional(),
      resumable: z.boolean().optional(),
    })
    .optional(),
  idempotencyKey: z.string().min(1).max(128).optional(),
  /** Runtime probe signals: what the job is, and whether it serves latency-sensitive traffic. */
  workloadType: z.enum(['TRAINING', 'FINE_TUNING', 'BATCH_INFERENCE', 'ONLINE_INFERENCE']).optional(),
  latencySensitive: z.boolean().optional(),
  podSets: z.array(PodSet).min(1),
  container: Container.optional(),
  /** Simulated backend only: make the job fail (tests, demos). */
  simulate: z
    .strictObject({ fail: z.boolean().optional(), failAfterSeconds: z.number().nonnegative().optional() })
    .optional(),
});

export type JobFile = z.infer<typeof JobFileSchema>;

/** One problem of a file: its 1-based line and what is wrong ("podSets[0].gpusPerPod: Invalid input"). */
export interface FileProblem {
  line: number;
  message: string;
}

/**
 * A file that is not valid YAML (`syntax`) or not the expected shape; the message lists every problem as
 * file:line: path: message, under a first line naming the file.
 */
export class FileProblems extends Error {
  constructor(
    readonly file: string,
    readonly syntax: boolean,
    readonly problems: FileProblem[],
    what: string,
  ) {
    super(
      `${file} is not ${syntax ? 'valid YAML' : `a valid ${what}`}:\n${problems
        .map((p) => `${file}:${p.line}: ${p.message}`)
        .join('\n')}`,
    );
    this.name = 'FileProblems';
  }
}

type Path = (string | number)[];

/** The 1-based line of the deepest node on `path` the document has (a key named by `key`, if given). */
function lineOf(doc: Document, counter: LineCounter, path: Path, key?: string): number {
  for (let n = path.length; n >= 0; n--) {
    const node = (n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true)) as {
      range?: [number, number, number];
    } | null;
    if (!node || typeof node !== 'object' || !node.range) continue;
    if (key !== undefined && n === path.length && isMap(node as unknown)) {
      const map = node as unknown as YAMLMap;
      const pair = map.items.find((p) => isScalar(p.key) && p.key.value === key);
      if (pair && isScalar(pair.key) && pair.key.range) return counter.linePos(pair.key.range[0]).line;
    }
    return counter.linePos(node.range[0]).line;
  }
  return 1;
}

function where(path: Path): string {
  return path.length
    ? `${path
        .map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`))
        .join('')
        .replace(/^\./, '')}: `
    : '';
}

/**
 * A YAML file checked against `schema` (strict objects: an unknown key is named with its line); throws
 * FileProblems listing every problem with its line. `what` names the file's kind ("is not a valid job").
 */
export function checkYamlFile<S extends z.ZodType>(
  source: string,
  file: string,
  schema: S,
  what: string,
): z.infer<S> {
  const counter = new LineCounter();
  const doc = parseDocument(source, { lineCounter: counter, uniqueKeys: true });
  if (doc.errors.length) {
    const problems = doc.errors.map((e) => ({
      line: (e.linePos as { line: number }[] | undefined)?.[0]?.line ?? 1,
      message: e.message.split('\n')[0]!,
    }));
    throw new FileProblems(file, true, problems, what);
  }
  const result = schema.safeParse(doc.toJS());
  if (!result.success) {
    const problems = result.error.issues.flatMap((issue): FileProblem[] => {
      const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
      if (issue.code === 'unrecognized_keys')
        return issue.keys.map((k) => ({
          line: lineOf(doc, counter, path, k),
          message: `${where([...path, k])}unknown field`,
        }));
      return [{ line: lineOf(doc, counter, path), message: `${where(path)}${issue.message}` }];
    });
    throw new FileProblems(file, false, problems, what);
  }
  return result.data;
}

/** Parses and validates a job file; throws FileProblems. */
export function checkJobFile(source: string, file: string): JobFile {
  return checkYamlFile(source, file, JobFileSchema, 'job');
}

/** What a derived idempotency key starts with (the CLI's and the console's are the same key). */
export const DERIVED_KEY_PREFIX = 'fairway-cli-';

/**
 * The text a derived idempotency key hashes (SHA-256, hex, after DERIVED_KEY_PREFIX): the job without its
 * idempotencyKey, keys sorted, so a key order, comment or whitespace change does not make a new job.
 */
export function idempotencyContent(job: JobFile): string {
  const canonical = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(canonical)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, x]) => [k, canonical(x)]),
          )
        : v;
  const { idempotencyKey: _ignored, ...content } = job;
  return JSON.stringify(canonical(content));
}

/** The caller's queues and projects, as the Targets query answers (names to resolve the file's names). */
export interface TargetList {
  queues: { id: string; name: string; tenant: { slug: string } }[];
  viewer: {
    memberships: {
      tenant: { slug: string; projects: { edges: { node: { id: string; slug: string } }[] } };
    }[];
  };
}

/** A name the file gives that resolves to nothing (`notFound`) or to several things. */
export class TargetProblem extends Error {
  constructor(
    message: string,
    readonly notFound: boolean,
  ) {
    super(message);
    this.name = 'TargetProblem';
  }
}

/** Whether the file names a queue or a project (not an ID): those need the TargetList. */
export function namesTargets(job: JobFile): boolean {
  return (!!job.queue && !job.queueId) || (!!job.project && !job.projectId);
}

/** The file's names (tenant, project slug, queue name) as the IDs the graph takes; throws TargetProblem. */
export function targetIdsOf(
  job: JobFile,
  targets: TargetList | null,
): { queueId?: string; projectId?: string } {
  const out: { queueId?: string; projectId?: string } = {};
  if (job.queueId) out.queueId = job.queueId;
  if (job.projectId) out.projectId = job.projectId;
  if (!namesTargets(job) || !targets) return out;
  const inTenant = <T extends { slug: string }>(t: T) => !job.tenant || t.slug === job.tenant;
  if (job.queue && !job.queueId) {
    const matches = targets.queues.filter((q) => q.name === job.queue && inTenant(q.tenant));
    if (matches.length === 0)
      throw new TargetProblem(
        `no queue '${job.queue}'${job.tenant ? ` in ${job.tenant}` : ''} among your tenants' queues`,
        true,
      );
    if (matches.length > 1)
      throw new TargetProblem(
        `queue '${job.queue}' exists in several of your tenants (${matches.map((q) => q.tenant.slug).join(', ')}): add 'tenant:' to the file`,
        false,
      );
    out.queueId = matches[0]!.id;
  }
  if (job.project && !job.projectId) {
    const matches = targets.viewer.memberships
      .map((m) => m.tenant)
      .filter(inTenant)
      .flatMap((t) => t.projects.edges.map((e) => ({ ...e.node, tenant: t.slug })))
      .filter((p) => p.slug === job.project);
    if (matches.length === 0)
      throw new TargetProblem(`no project '${job.project}' among your tenants' projects`, true);
    if (matches.length > 1)
      throw new TargetProblem(
        `project '${job.project}' exists in several of your tenants: add 'tenant:' to the file`,
        false,
      );
    out.projectId = matches[0]!.id;
  }
  return out;
}

type JobContainer = NonNullable<JobFile['container']>;

/** SubmitJobInput's fields from a job file (its names already resolved to IDs). */
export type JobFileInput = Pick<JobFile, 'name' | 'podSets'> &
  Partial<
    Pick<
      JobFile,
      | 'priorityClass'
      | 'expectedDurationSeconds'
      | 'maxRunSeconds'
      | 'checkpoint'
      | 'workloadType'
      | 'latencySensitive'
      | 'simulate'
    >
  > & {
    idempotencyKey?: string;
    queueId?: string;
    projectId?: string;
    container?: Omit<JobContainer, 'env'> & { env?: { name: string; value: string }[] };
  };

/** The submit input of a file: what it declares, nothing more (an env map becomes the graph's list). */
export function jobFileInput(
  job: JobFile,
  ids: { queueId?: string; projectId?: string },
  idempotencyKey: string | undefined,
): JobFileInput {
  const input: JobFileInput = {
    name: job.name,
    podSets: job.podSets,
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    ...ids,
  };
  if (job.priorityClass) input.priorityClass = job.priorityClass;
  if (job.expectedDurationSeconds !== undefined) input.expectedDurationSeconds = job.expectedDurationSeconds;
  if (job.maxRunSeconds !== undefined) input.maxRunSeconds = job.maxRunSeconds;
  if (job.checkpoint) input.checkpoint = job.checkpoint;
  if (job.workloadType) input.workloadType = job.workloadType;
  if (job.latencySensitive !== undefined) input.latencySensitive = job.latencySensitive;
  if (job.simulate) input.simulate = job.simulate;
  if (job.container) {
    const { env, ...container } = job.container;
    input.container = {
      ...container,
      ...(env === undefined
        ? {}
        : {
            env: Array.isArray(env)
              ? env
              : Object.entries(env).map(([k, v]) => ({ name: k, value: String(v) })),
          }),
    };
  }
  return input;
}
