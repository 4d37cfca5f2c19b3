// The servers under test as child processes: Fairway (`node --import tsx src/main.ts`, seeded
// in its database before start) and the bare-yoga baseline; starting, waiting for them to
// listen, and stopping them (also when a run fails).
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeGlobalID } from '@pothos/plugin-relay';
import type { BaselineSpec } from './baseline-server.js';
import { withRaisedFdLimit } from './fd-limits.js';
import { ROOT } from './repo-root.js';

/** The bench's entry, which runs the baseline server when given `--baseline-server <spec.json>`. */
const BENCH_ENTRY = fileURLToPath(new URL('./index.ts', import.meta.url));

// ─────────────────────────── child processes ───────────────────────────

export interface Started {
  child: ChildProcess;
  url: string;
  pid: number;
  stderr: string[];
  dataDir?: string;
  tokens: Record<string, string>;
  /** Global ids of the jobs seeded before start, in seed order. */
  seeded: string[];
  stop(): Promise<void>;
}

/** Starts `node <args>` in the repository and waits for `pattern` on its stdout. */
export function spawnAndWait(
  args: string[],
  env: NodeJS.ProcessEnv,
  pattern: RegExp,
  what: string,
  timeoutMs = 60_000,
): Promise<{ child: ChildProcess; match: RegExpExecArray; stderr: string[] }> {
  const command = withRaisedFdLimit(args);
  const child = spawn(command.file, command.args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 200) stderr.push(d);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start in ${timeoutMs} ms:\n${out}\n${stderr.join('')}`)),
      timeoutMs,
    );
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      if (out.length < 100_000) out += d;
      const match = pattern.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match, stderr });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}) before listening:\n${out}\n${stderr.join('')}`));
    });
  });
}

/** The demo's API tokens a gateway wrote, by "<tenant slug or platform>/<role>". */
export function demoTokens(dataDir: string): Record<string, string> {
  const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as {
    credentials: { tenant: string | null; role: string; token: string }[];
  };
  const tokens: Record<string, string> = {};
  for (const c of creds.credentials) tokens[`${c.tenant ?? 'platform'}/${c.role}`] = c.token;
  return tokens;
}

/** Every child this run started, so a failed run still stops them. */
export const live = new Set<() => Promise<void>>();

/** Stops the child (SIGTERM, then SIGKILL after 10 s); registered in `live` until then. */
export function stopper(child: ChildProcess): () => Promise<void> {
  const stop = async () => {
    live.delete(stop);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  live.add(stop);
  return stop;
}

export interface SeedJob {
  name: string;
  flavor: 'h100-80g' | 'a100-1g.10gb';
  gpus: number;
  seconds: number;
}

/**
 * Bulk setup without the API: creates the demo (as `npm start` would) and `jobs` PENDING jobs
 * of aurora (MEMBER max, project llm-pretraining) in the data dir before the server starts,
 * through the server's own ORM entities, in one transaction. At start the server rebuilds its
 * scheduler from the database (as after a restart) and admits what fits.
 */
async function seedDatabase(dataDir: string, jobs: SeedJob[]): Promise<string[]> {
  const { openDatabase, migrate } = await import('../../src/persistence/orm.js');
  const { seedDemo } = await import('../../src/server/demo/seed.js');
  const { Project, Tenant, User } = await import('../../src/persistence/tenancy/entities.js');
  const { TENANT_FILTER } = await import('../../src/persistence/tenant-filter.js');
  const { Queue } = await import('../../src/persistence/cluster/entities.js');
  const { Job, JobEvent } = await import('../../src/persistence/jobs/entities.js');
  const { uuidv7 } = await import('../../src/persistence/ids.js');
  const orm = await openDatabase({ database: { dialect: 'sqlite', file: path.join(dataDir, 'fairway.db') } });
  try {
    await migrate(orm);
    await seedDemo(orm, dataDir);
    const em = orm.em.fork({ clear: true });
    em.setFilterParams(TENANT_FILTER, { all: true });
    const tenant = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    const queue = await em.findOneOrFail(Queue, { tenant: tenant.id });
    const project = await em.findOneOrFail(Project, { tenant: tenant.id });
    const user = await em.findOneOrFail(User, { email: 'max@aurora.example' });
    const base = Date.now() - jobs.length - 1000;
    const ids = jobs.map((_, i) => uuidv7(base + i));
    await em.transactional(async (tx) => {
      jobs.forEach((j, i) => {
        const at = base + i;
        const job = tx.create(Job, {
          id: ids[i]!,
          tenant: tx.getReference(Tenant, tenant.id),
          project: tx.getReference(Project, project.id),
          queue: tx.getReference(Queue, queue.id),
          submittedBy: tx.getReference(User, user.id),
          name: j.name,
          priorityClass: 'training',
          podSets: [
            { name: 'main', count: 1, perPod: { gpu: j.gpus, cpu: 0, memory: 0 }, flavors: [j.flavor] },
          ],
          expectedDurationMs: j.seconds * 1000,
          maxRunMs: null,
          workload: null,
          state: 'PENDING',
          admission: null,
          idempotencyKey: null,
          requestHash: `bench-${i}`.padEnd(64, '0'),
          submitTime: at,
          gpusRequested: j.gpus,
          preemptionCount: 0,
          exitReason: null,
          submittedAt: new Date(at),
          admittedAt: null,
          startedAt: null,
          finishedAt: null,
        });
        tx.create(JobEvent, {
          job,
          tenant: job.tenant,
          type: 'SUBMITTED',
          reason: null,
          message: `Submitted to queue ${queue.name}`,
          data: null,
          at: new Date(at),
        });
      });
    });
    return ids.map((id) => encodeGlobalID('Job', id));
  } finally {
    await orm.close(true);
  }
}

/** Lets the bench read /metrics (part 2b counts admissions there) without an identity lookup. */
export const METRICS_TOKEN = 'fairway-bench-metrics-token-0123456789';

export interface FairwayOptions {
  /** A PostgreSQL DATABASE_URL (an empty database: the server migrates it and seeds the demo); default:
   * SQLite in the temp data dir.
   */
  databaseUrl?: string;
}

export async function startFairway(
  timeScale: number,
  seed: SeedJob[] = [],
  options: FairwayOptions = {},
): Promise<Started> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-bench-'));
  if (seed.length && options.databaseUrl)
    throw new Error('seeding before start is implemented for SQLite only');
  const seeded = seed.length ? await seedDatabase(dataDir, seed) : [];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: dataDir,
    FAIRWAY_DEMO: 'true',
    FAIRWAY_DEMO_TRICKLE: 'false',
    NODE_ENV: 'production',
    FAIRWAY_SIM_TIME_SCALE: String(timeScale),
    // The bench measures capacity from a handful of tokens: the per-caller front-door limits
    //, sized for many real clients, would refuse its load by design.
    FAIRWAY_RATE_LIMITS: process.env.FAIRWAY_RATE_LIMITS ?? 'false',
    FAIRWAY_WS_MAX_CONNECTIONS_PER_PRINCIPAL: '20000',
    FAIRWAY_WS_MAX_CONNECTIONS_PER_TENANT: '20000',
    FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: '20000',
    FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_TENANT: '20000',
    FAIRWAY_WS_MAX_HALF_OPEN_PER_IP: '1000',
    FAIRWAY_METRICS_TOKEN: METRICS_TOKEN,
  };
  // The embedded default: no external database or Redis even if the caller's shell has them,
  // unless the part asks for PostgreSQL. The demo credentials file stays in the data dir.
  delete env.DATABASE_URL;
  if (options.databaseUrl) env.DATABASE_URL = options.databaseUrl;
  delete env.REDIS_URL;
  delete env.FAIRWAY_GRAPHIQL;
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const { child, match, stderr } = await spawnAndWait(
    [...extra, '--import', 'tsx', 'src/main.ts'],
    env,
    /serving on (http:\/\/\S+\/graphql)/,
    'fairway',
  );
  const tokens = demoTokens(dataDir);
  const stop = stopper(child);
  return {
    child,
    url: match[1]!,
    pid: child.pid!,
    stderr,
    dataDir,
    tokens,
    seeded,
    async stop() {
      await stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function startBaseline(spec: BaselineSpec): Promise<Started> {
  const specFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-bench-bare-')), 'spec.json');
  fs.writeFileSync(specFile, JSON.stringify(spec));
  const env = { ...process.env, NODE_ENV: 'production' };
  const { child, match, stderr } = await spawnAndWait(
    ['--import', 'tsx', BENCH_ENTRY, '--baseline-server', specFile],
    env,
    /BASELINE_LISTENING (\S+)/,
    'bare yoga',
  );
  const stop = stopper(child);
  return {
    child,
    url: match[1]!,
    pid: child.pid!,
    stderr,
    tokens: {},
    seeded: [],
    async stop() {
      await stop();
      fs.rmSync(path.dirname(specFile), { recursive: true, force: true });
    },
  };
}
