// A job file (YAML) checked before anything is sent: syntax and shape errors name file:line.
import { createHash } from 'node:crypto';
import { type Document, isMap, isScalar, LineCounter, parseDocument, type YAMLMap } from 'yaml';
import { z } from 'zod';
import { CliError, EXIT } from './context.js';

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

export const JobFileSchema = z.strictObject({
  name,
  /** Tenant slug, when the caller belongs to several. */
  tenant: name.optional(),
  /** Project slug (default: the tenant's default project) or a Project ID in projectId. */
  project: name.optional(),
  projectId: name.optional(),
  /** Queue name (default: the project's queue) or a Queue ID in queueId. */
  queue: name.optional(),
  queueId: name.optional(),
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

/** Parses and validates; throws CliError(USAGE) listing every problem as file:line: path: message. */
export function parseJobFile(source: string, file: string): JobFile {
  const counter = new LineCounter();
  const doc = parseDocument(source, { lineCounter: counter, uniqueKeys: true });
  if (doc.errors.length) {
    const lines = doc.errors.map(
      (e) =>
        `${file}:${(e.linePos as { line: number }[] | undefined)?.[0]?.line ?? 1}: ${e.message.split('\n')[0]}`,
    );
    throw new CliError(`${file} is not valid YAML:\n${lines.join('\n')}`, EXIT.USAGE);
  }
  const result = JobFileSchema.safeParse(doc.toJS());
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
      if (issue.code === 'unrecognized_keys') {
        return issue.keys
          .map((k) => `${file}:${lineOf(doc, counter, path, k)}: ${where([...path, k])}unknown field`)
          .join('\n');
      }
      return `${file}:${lineOf(doc, counter, path)}: ${where(path)}${issue.message}`;
    });
    throw new CliError(`${file} is not a valid job:\n${lines.join('\n')}`, EXIT.USAGE);
  }
  return result.data;
}

/** Same content, same key: a key order, comment or whitespace change does not make a new job. */
export function idempotencyKeyOf(job: JobFile): string {
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
  return `fairway-cli-${createHash('sha256')
    .update(JSON.stringify(canonical(content)))
    .digest('hex')}`;
}
