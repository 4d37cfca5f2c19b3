// Benchmark of the HTTP / graphql-ws API (not a test: nothing here asserts a time). Run: npm run bench:api
//
// Starts Fairway itself as child processes (`node --import tsx src/main.ts`, the same entry
// point as `npm start`) on the embedded default — SQLite in a temp FAIRWAY_DATA_DIR, the
// simulated cluster, in-memory events — with NODE_ENV=production and FAIRWAY_DEMO_TRICKLE=false,
// a fresh server (fresh database) per part. Load comes from this (parent) process, which shares
// the machine's cores with the server under test.
//
//   (1) A tenant dashboard query (aurora admin token; its queue, usage, pending count and the
//       newest 50 of 200 jobs with project and position) at concurrency 1, 8, 32, 128 — closed
//       loop, keep-alive HTTP, warm-up then a fixed duration per level. Compared with a bare
//       graphql-yoga server (createYoga + createServer, no auth, no database, no plugins) in its
//       own child process, answering the same query text from in-memory data of the same size
//       and the same job states.
//   (2) Submit → ADMITTED latency as seen by a graphql-ws `tenantEvents` subscriber, open loop at
//       50 and 500 submits/s (1-slice MIG jobs that run 30 declared seconds at time scale 1000,
//       so capacity frees as fast as it is taken). Measured from the moment a submit was due
//       (its scheduled start, so a server that falls behind is charged for the queueing).
//   (3) N graphql-ws subscribers (one socket each), each watching one pending job's
//       `jobPosition(id)`; then one running job is cancelled so the queue head is admitted and
//       every position moves. Delivery latency from the trigger and from the head's ADMITTED
//       timestamp; server memory per subscriber from /proc/<pid>/status VmRSS before/after.
//       Sizes that would push the run past ~5.5 minutes (extrapolated) are skipped and said so.
//
// Bulk setup (the 200 dashboard jobs, the n + 32 position jobs) is written into the database
// before the server starts, through the server's own entities: submitting thousands of jobs
// over the API takes minutes on this machine (part 2 measures that rate).
// Server CPU time (/proc/<pid>/stat) and the JS thread's run/run-queue time (/proc/<pid>/schedstat)
// are reported beside wall-clock figures because the machine may be shared.
//
// Knobs (environment): BENCH_PARTS=1,2,3  BENCH_SECONDS=5  BENCH_SUBSCRIBERS=500,1000,5000
//   BENCH_BUDGET_S=330  BENCH_SERVER_NODE_ARGS (e.g. --cpu-prof)
//   BENCH_RESULTS=bench/RESULTS-api.md (empty string: do not write; text after a
//   `<!-- notes -->` line in the existing file is kept)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { encodeGlobalID } from '@pothos/plugin-relay';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ─────────────────────────── the dashboard query (both servers) ───────────────────────────

const DASHBOARD = `query Dashboard($slug: String!) {
  tenant(slug: $slug) {
    queues {
      name
      usage { flavor used borrowed }
      pendingCount
      jobs(last: 50) { edges { node { name state project { name } position { inQueue } } } }
    }
  }
}`;

// ─────────────────────────── bare yoga baseline (child process mode) ───────────────────────────

async function runBaselineServer(): Promise<void> {
  const { createSchema, createYoga } = await import('graphql-yoga');
  const spec = JSON.parse(fs.readFileSync(process.argv[process.argv.indexOf('--baseline-server') + 1]!, 'utf8')) as BaselineSpec;
  interface MemJob { name: string; state: string; project: { name: string } | null; seq: number }
  const jobs: MemJob[] = spec.jobs.map((j, seq) => ({ name: j.name, state: j.state, project: j.project ? { name: j.project } : null, seq }));
  const queue = { name: spec.queueName, usage: spec.usage, jobs };
  const tenants = new Map([[spec.slug, { slug: spec.slug, queues: [queue] }]]);
  const schema = createSchema<Record<string, unknown>>({
    typeDefs: /* GraphQL */ `
      type Query { tenant(slug: String!): Tenant! }
      type Tenant { slug: String! queues: [Queue!]! }
      type QueueUsage { flavor: String! used: Float! borrowed: Float! }
      type Project { name: String! }
      type JobPosition { inQueue: Int queueLength: Int }
      enum JobState { PENDING ADMITTED RUNNING SUCCEEDED FAILED CANCELLED }
      type Job { name: String! state: JobState! project: Project position: JobPosition }
      type QueueJobsConnectionEdge { cursor: String! node: Job! }
      type PageInfo { hasNextPage: Boolean! hasPreviousPage: Boolean! }
      type QueueJobsConnection { edges: [QueueJobsConnectionEdge!]! pageInfo: PageInfo! }
      type Queue { name: String! usage: [QueueUsage!]! pendingCount: Int! jobs(first: Int, last: Int): QueueJobsConnection! }
    `,
    resolvers: {
      Query: {
        tenant: (_: unknown, { slug }: { slug: string }) => {
          const t = tenants.get(slug);
          if (!t) throw new Error('not found');
          return t;
        },
      },
      Queue: {
        pendingCount: (q: typeof queue) => q.jobs.filter((j) => j.state === 'PENDING').length,
        jobs: (q: typeof queue, { first, last }: { first?: number; last?: number }) => {
          const all = q.jobs;
          const page = last != null ? all.slice(Math.max(0, all.length - last)) : all.slice(0, first ?? all.length);
          return {
            edges: page.map((node) => ({ cursor: String(node.seq), node: { ...node, queue: q } })),
            pageInfo: { hasNextPage: false, hasPreviousPage: page.length < all.length },
          };
        },
      },
      Job: {
        // Computed per job from memory, like Fairway computes it per job from the scheduler.
        position: (j: MemJob & { queue: typeof queue }) => {
          if (j.state !== 'PENDING') return null;
          const pending = j.queue.jobs.filter((o) => o.state === 'PENDING');
          return { inQueue: 1 + pending.findIndex((o) => o === j || o.seq === j.seq), queueLength: pending.length };
        },
      },
    },
  });
  const yoga = createYoga({ schema, graphqlEndpoint: '/graphql', graphiql: false, landingPage: false, logging: false });
  const server = http.createServer(yoga);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    console.log(`BASELINE_LISTENING http://127.0.0.1:${port}/graphql`);
  });
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

interface BaselineSpec {
  slug: string;
  queueName: string;
  usage: { flavor: string; used: number; borrowed: number }[];
  jobs: { name: string; state: string; project: string | null }[];
}

// ─────────────────────────── child processes ───────────────────────────

interface Started {
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

function spawnAndWait(args: string[], env: NodeJS.ProcessEnv, pattern: RegExp, what: string, timeoutMs = 60_000): Promise<{ child: ChildProcess; match: RegExpExecArray; stderr: string[] }> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    if (stderr.length < 200) stderr.push(d);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start in ${timeoutMs} ms:\n${out}\n${stderr.join('')}`)), timeoutMs);
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

/** Every child this run started, so a failed run still stops them. */
const live = new Set<() => Promise<void>>();

function stopper(child: ChildProcess): () => Promise<void> {
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

interface SeedJob {
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
  const { openDatabase, migrate } = await import('../src/persistence/orm.js');
  const { seedDemo } = await import('../src/server/demo.js');
  const { Project, Tenant, User, TENANT_FILTER } = await import('../src/persistence/entities.js');
  const { Job, JobEvent, Queue } = await import('../src/persistence/scheduling-entities.js');
  const { uuidv7 } = await import('../src/persistence/ids.js');
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
          podSets: [{ name: 'main', count: 1, perPod: { gpu: j.gpus, cpu: 0, memory: 0 }, flavors: [j.flavor] }],
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
        tx.create(JobEvent, { job, tenant: job.tenant, type: 'SUBMITTED', reason: null, message: `Submitted to queue ${queue.name}`, data: null, at: new Date(at) });
      });
    });
    return ids.map((id) => encodeGlobalID('Job', id));
  } finally {
    await orm.close(true);
  }
}

async function startFairway(timeScale: number, seed: SeedJob[] = []): Promise<Started> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-bench-'));
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
  };
  // The embedded default: no external database or Redis even if the caller's shell has them.
  delete env.DATABASE_URL;
  delete env.REDIS_URL;
  delete env.FAIRWAY_GRAPHIQL;
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const { child, match, stderr } = await spawnAndWait([...extra, '--import', 'tsx', 'src/main.ts'], env, /serving on (http:\/\/\S+\/graphql)/, 'fairway');
  const creds = JSON.parse(fs.readFileSync(path.join(dataDir, 'demo-credentials.json'), 'utf8')) as { credentials: { tenant: string | null; role: string; token: string }[] };
  const tokens: Record<string, string> = {};
  for (const c of creds.credentials) tokens[`${c.tenant ?? 'platform'}/${c.role}`] = c.token;
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

async function startBaseline(spec: BaselineSpec): Promise<Started> {
  const specFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-bench-bare-')), 'spec.json');
  fs.writeFileSync(specFile, JSON.stringify(spec));
  const env = { ...process.env, NODE_ENV: 'production' };
  const { child, match, stderr } = await spawnAndWait(['--import', 'tsx', fileURLToPath(import.meta.url), '--baseline-server', specFile], env, /BASELINE_LISTENING (\S+)/, 'bare yoga');
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

/** User + system CPU seconds of a process so far (/proc/<pid>/stat). */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

/** The server's main (JS) thread: ns on a CPU and ns runnable but waiting for one (/proc/<pid>/schedstat). */
function sched(pid: number): { runNs: number; waitNs: number } {
  const [run, wait] = fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').trim().split(/\s+/).map(Number);
  return { runNs: run ?? NaN, waitNs: wait ?? NaN };
}

/** "on-CPU % / waiting-for-CPU %" of the wall time between two schedstat readings. */
function schedShare(before: { runNs: number; waitNs: number }, after: { runNs: number; waitNs: number }, wallMs: number): string {
  return `${((100 * (after.runNs - before.runNs)) / 1e6 / wallMs).toFixed(0)}% / ${((100 * (after.waitNs - before.waitNs)) / 1e6 / wallMs).toFixed(0)}%`;
}

/** The commit the server code came from, and whether the working tree differed from it. */
function gitDescribe(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'schema', 'plugins'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return `${head}${dirty ? ' with uncommitted changes under src/schema/plugins' : ''}`;
  } catch {
    return 'unknown (no git)';
  }
}

function loadAvg(): string {
  return os.loadavg().map((l) => l.toFixed(1)).join(' / ');
}

function rssKiB(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(status);
  return m ? Number(m[1]) : NaN;
}

// ─────────────────────────── HTTP client ───────────────────────────

function post(agent: http.Agent, url: URL, token: string | null, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': Buffer.byteLength(body),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const sharedAgent = new http.Agent({ keepAlive: true, maxSockets: 64 });

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function gql<T = any>(server: Started, token: string | null, query: string, variables: Record<string, unknown> = {}, agent = sharedAgent): Promise<T> {
  const res = await post(agent, new URL(server.url), token, JSON.stringify({ query, variables }));
  const body = JSON.parse(res.text) as { data?: T; errors?: unknown[] };
  if (body.errors?.length || !body.data) throw new Error(`GraphQL error (${res.status}): ${res.text.slice(0, 500)}`);
  return body.data;
}

function wsClient(server: Started, token: string): Client {
  return createClient({
    url: server.url.replace(/^http/, 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: true,
    retryAttempts: 0,
    keepAlive: 0,
  });
}

// ─────────────────────────── stats and tables ───────────────────────────

function pct(sorted: number[], q: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');
const f0 = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '—');
const ms = (n: number) => (Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)) : '—');

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i]!)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 1) + ':').join('|')}|`, ...rows.map(line)].join('\n');
}

const report: string[] = [];
function out(text = ''): void {
  console.log(text);
  report.push(text);
}

// ─────────────────────────── setup helpers ───────────────────────────

interface Ids {
  tenantId: string;
  queueId: string;
  queueName: string;
  projectId: string;
}

async function auroraIds(server: Started): Promise<Ids> {
  const d = await gql(server, server.tokens['aurora-research/TENANT_ADMIN']!, `{ tenant(slug: "aurora-research") { id queues { id name } projects(first: 5) { edges { node { id } } } } }`);
  return { tenantId: d.tenant.id, queueId: d.tenant.queues[0].id, queueName: d.tenant.queues[0].name, projectId: d.tenant.projects.edges[0].node.id };
}

const SUBMIT = `mutation Submit($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;

/** Submits `count` jobs with at most `parallel` in flight; returns their ids in submit order. */
async function submitMany(server: Started, token: string, count: number, parallel: number, input: (i: number) => Record<string, unknown>): Promise<string[]> {
  const ids: string[] = new Array(count);
  let next = 0;
  const agent = new http.Agent({ keepAlive: true, maxSockets: parallel });
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        const d = await gql(server, token, SUBMIT, { in: input(i) }, agent);
        ids[i] = d.submitJob.id;
      }
    }),
  );
  agent.destroy();
  return ids;
}

/** Waits until the queue's pending/admitted counts stop changing (the scheduler settled). */
async function settle(server: Started, ids: Ids, token: string, timeoutMs = 30_000): Promise<{ pending: number; admitted: number }> {
  let last = '';
  let stable = 0;
  const deadline = Date.now() + timeoutMs;
  let now = { pending: -1, admitted: -1 };
  while (Date.now() < deadline) {
    const d = await gql(server, token, `query($id: ID!) { node(id: $id) { ... on Queue { pendingCount admittedCount } } }`, { id: ids.queueId });
    now = { pending: d.node.pendingCount, admitted: d.node.admittedCount };
    const key = JSON.stringify(now);
    stable = key === last ? stable + 1 : 0;
    last = key;
    if (stable >= 3) return now;
    await sleep(150);
  }
  return now;
}

// ─────────────────────────── part 1: dashboard throughput ───────────────────────────

interface LoadResult {
  ok: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
}

async function closedLoop(url: string, token: string | null, body: string, concurrency: number, warmupMs: number, durationMs: number): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const target = new URL(url);
  const latencies: number[] = [];
  let ok = 0;
  let errors = 0;
  let measuring = false;
  let stopAt = Infinity;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const t0 = performance.now();
      let good = false;
      try {
        const res = await post(agent, target, token, body);
        good = res.status === 200 && !res.text.includes('"errors"');
      } catch {
        good = false;
      }
      const t1 = performance.now();
      if (measuring && t1 <= stopAt) {
        if (good) {
          ok++;
          latencies.push(t1 - t0);
        } else errors++;
      }
    }
  };
  const start = performance.now();
  stopAt = start + warmupMs + durationMs;
  const workers = Array.from({ length: concurrency }, worker);
  await sleep(warmupMs);
  measuring = true;
  const measuredFrom = performance.now();
  await Promise.all(workers);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const seconds = (stopAt - measuredFrom) / 1000;
  return { ok, errors, seconds, p50: pct(latencies, 0.5), p99: pct(latencies, 0.99) };
}

async function part1(seconds: number): Promise<void> {
  out('## 1. Tenant dashboard query — Fairway vs bare graphql-yoga');
  out();
  // ~200 jobs in aurora's queue: 150 one-GPU H100 jobs (32 H100s in the cohort: the rest pend)
  // and 50 one-slice MIG jobs (all admitted), running for a declared 11 days at time scale 60.
  const seed: SeedJob[] = Array.from({ length: 200 }, (_, i) => ({ name: `dash-${i}`, flavor: i % 4 === 3 ? 'a100-1g.10gb' : 'h100-80g', gpus: 1, seconds: 1e6 }));
  const server = await startFairway(60, seed);
  try {
    const ids = await auroraIds(server);
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const counts = await settle(server, ids, admin);
    // The same jobs (names, states, projects) for the bare server, oldest first.
    type Row = { name: string; state: string; project: { name: string } | null };
    const rowsSeen: Row[] = [];
    let q: { name: string; usage: BaselineSpec['usage'] } | null = null;
    for (let after: string | null = null; ; ) {
      const page: { node: { name: string; usage: BaselineSpec['usage']; jobs: { edges: { node: Row }[]; pageInfo: { endCursor: string | null; hasNextPage: boolean } } } } = await gql(
        server,
        admin,
        `query($id: ID!, $after: String) { node(id: $id) { ... on Queue { name usage { flavor used borrowed } jobs(first: 100, after: $after) { edges { node { name state project { name } } } pageInfo { endCursor hasNextPage } } } } }`,
        { id: ids.queueId, after },
      );
      q = { name: page.node.name, usage: page.node.usage };
      rowsSeen.push(...page.node.jobs.edges.map((e) => e.node));
      if (!page.node.jobs.pageInfo.hasNextPage) break;
      after = page.node.jobs.pageInfo.endCursor;
    }
    const spec: BaselineSpec = {
      slug: 'aurora-research',
      queueName: q!.name,
      usage: q!.usage,
      jobs: rowsSeen.map((r) => ({ name: r.name, state: r.state, project: r.project?.name ?? null })),
    };
    const bare = await startBaseline(spec);
    try {
      const body = JSON.stringify({ query: DASHBOARD, variables: { slug: 'aurora-research' } });
      // Same query text, same answer shape and size on both.
      const fw = await post(sharedAgent, new URL(server.url), admin, body);
      const bw = await post(sharedAgent, new URL(bare.url), null, body);
      const fwJson = JSON.parse(fw.text);
      const bwJson = JSON.parse(bw.text);
      if (fwJson.errors || bwJson.errors) throw new Error(`dashboard query failed: ${fw.text.slice(0, 300)} / ${bw.text.slice(0, 300)}`);
      const fwEdges = fwJson.data.tenant.queues[0].jobs.edges.length;
      const pendingShown = fwJson.data.tenant.queues[0].jobs.edges.filter((e: { node: { position: unknown } }) => e.node.position).length;
      out(
        `Setup: ${spec.jobs.length} jobs in ${q.name} (seeded in the database before start; the server admitted ${counts.admitted}, ${counts.pending} pending). ` +
          `The query returns ${fwEdges} jobs (${pendingShown} pending, each with its position). Response: Fairway ${fw.text.length} B, bare ${bw.text.length} B. ` +
          `Closed loop, keep-alive HTTP/1.1, 1 s warm-up + ${seconds} s per level; load generator in the parent process on the same 2 cores.`,
      );
      out();
      const rows: string[][] = [];
      for (const c of [1, 8, 32, 128]) {
        // Server CPU time per answered request too: less sensitive than req/s to other load on the machine.
        let cpu = cpuSeconds(server.pid);
        const s0 = sched(server.pid);
        const w0 = performance.now();
        const a = await closedLoop(server.url, admin, body, c, 1000, seconds * 1000);
        const cpuA = cpuSeconds(server.pid) - cpu;
        const shareA = schedShare(s0, sched(server.pid), performance.now() - w0);
        cpu = cpuSeconds(bare.pid);
        const b = await closedLoop(bare.url, null, body, c, 1000, seconds * 1000);
        const cpuB = cpuSeconds(bare.pid) - cpu;
        const ra = a.ok / a.seconds;
        const rb = b.ok / b.seconds;
        // CPU includes the 1 s warm-up: divide by all requests answered in warm-up + measurement (≈ rate × (1 + seconds)).
        const cpuPerA = (1000 * cpuA) / (ra * (1 + seconds));
        const cpuPerB = (1000 * cpuB) / (rb * (1 + seconds));
        rows.push([String(c), f1(ra), ms(a.p50), ms(a.p99), ms(cpuPerA), shareA, f1(rb), ms(b.p50), ms(b.p99), ms(cpuPerB), `${(ra / rb).toFixed(3)} (1:${(rb / ra).toFixed(0)})`, String(a.errors + b.errors)]);
        console.log(`  c=${c}: fairway ${f1(ra)} req/s, bare ${f1(rb)} req/s`);
      }
      out(table(['concurrency', 'fairway req/s', 'p50 ms', 'p99 ms', 'CPU ms/req', 'on-CPU / waiting', 'bare req/s', 'p50 ms', 'p99 ms', 'CPU ms/req', 'ratio fw/bare (req/s)', 'errors'], rows));
      out();
      out(`Server RSS after the load: Fairway ${f0(rssKiB(server.pid) / 1024)} MiB, bare yoga ${f0(rssKiB(bare.pid) / 1024)} MiB.`);
      out();
    } finally {
      await bare.stop();
    }
  } finally {
    reportServerErrors(server);
    await server.stop();
  }
}

function reportServerErrors(server: Started): void {
  const text = server.stderr.join('');
  if (text.trim()) out(`Server stderr (first lines):\n\n    ${text.split('\n').slice(0, 8).join('\n    ')}\n`);
}

// ─────────────────────────── part 2: submit → ADMITTED ───────────────────────────

async function part2(seconds: number): Promise<void> {
  out('## 2. Submit → ADMITTED latency seen by a `tenantEvents` subscriber');
  out();
  const WINDOW_S = 15; // after the last submit was due, how long we wait for acknowledgements and events
  const server = await startFairway(1000);
  const rows: string[][] = [];
  const notes: string[] = [];
  let closing = false;
  try {
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const client = wsClient(server, admin);
    // jobId → when the ADMITTED event arrived and its own timestamp (may come before the submit's answer).
    const admittedAt = new Map<string, { recv: number; at: number }>();
    let anyEvent = false;
    const connected = new Promise<void>((r) => client.on('connected', () => r()));
    const dispose = client.subscribe<{ tenantEvents: { kind: string; jobId: string | null; at: string } }>(
      { query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId at } }`, variables: { t: ids.tenantId } },
      {
        next: (m) => {
          const recv = performance.timeOrigin + performance.now();
          const e = m.data?.tenantEvents;
          if (e?.kind === 'ADMITTED' && e.jobId && !admittedAt.has(e.jobId)) admittedAt.set(e.jobId, { recv, at: Date.parse(e.at) });
          anyEvent = true;
        },
        error: (e) => {
          if (!closing) console.error('tenantEvents subscription failed:', e instanceof Error ? e.message : e);
        },
        complete: () => undefined,
      },
    );
    await connected;
    // The subscription is live once a probe job is seen admitted.
    for (let i = 0; i < 200 && !anyEvent; i++) {
      if (i % 20 === 0) await submitMany(server, member, 1, 1, () => ({ queueId: ids.queueId, name: `probe-${i}`, podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }], expectedDurationSeconds: 1 }));
      await sleep(50);
    }

    for (const rate of [50, 500]) {
      const total = Math.round(rate * seconds);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
      const target = new URL(server.url);
      const acked: { id: string; due: number; answeredAfter: number }[] = [];
      let errors = 0;
      let sent = 0;
      let outstanding = 0;
      let open = true;
      const cpu0 = cpuSeconds(server.pid);
      const sched0 = sched(server.pid);
      const wallStart = performance.timeOrigin + performance.now();
      const wallNow = () => performance.timeOrigin + performance.now();
      // Open loop: submit i is due at start + i/rate, whatever happened to the earlier ones.
      while (sent < total) {
        const due = Math.min(total, Math.floor(((wallNow() - wallStart) * rate) / 1000) + 1);
        while (sent < due) {
          const i = sent++;
          const scheduled = wallStart + (i * 1000) / rate;
          const bodyText = JSON.stringify({
            query: SUBMIT,
            variables: { in: { queueId: ids.queueId, projectId: ids.projectId, name: `r${rate}-${i}`, podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }], expectedDurationSeconds: 30 } },
          });
          outstanding++;
          post(agent, target, member, bodyText).then(
            (res) => {
              outstanding--;
              if (!open) return;
              const id = (JSON.parse(res.text) as { data?: { submitJob?: { id: string } } }).data?.submitJob?.id;
              if (id) acked.push({ id, due: scheduled, answeredAfter: wallNow() - scheduled });
              else errors++;
            },
            () => {
              outstanding--;
              if (open) errors++;
            },
          );
        }
        await sleep(1);
      }
      const lastDue = wallStart + ((total - 1) * 1000) / rate;
      const windowEnd = lastDue + WINDOW_S * 1000;
      while (wallNow() < windowEnd && (outstanding > 0 || acked.some((a) => !admittedAt.has(a.id)))) await sleep(50);
      open = false;
      const wallEnd = wallNow();
      const cpu = cpuSeconds(server.pid) - cpu0;
      const share = schedShare(sched0, sched(server.pid), wallEnd - wallStart);
      const stillOutstanding = outstanding;
      agent.destroy();
      // Every offered submit counts: one not acknowledged or not seen admitted in the window is "> window".
      const lat: number[] = [];
      const serverLat: number[] = [];
      const resp = acked.map((a) => a.answeredAfter);
      let lastAdmit = wallStart;
      for (const a of acked) {
        const seen = admittedAt.get(a.id);
        if (!seen || seen.recv > windowEnd) continue;
        lat.push(seen.recv - a.due);
        serverLat.push(seen.at - a.due);
        lastAdmit = Math.max(lastAdmit, seen.recv);
      }
      const measured = lat.length;
      const pad = (xs: number[]) => [...xs, ...new Array<number>(Math.max(0, total - xs.length)).fill(Infinity)].sort((x, y) => x - y);
      const lp = pad(lat);
      const sp = pad(serverLat);
      const rp = pad(resp);
      const over = `> ${WINDOW_S} s`;
      const show = (v: number) => (v === Infinity ? over : ms(v));
      rows.push([
        `${rate}/s`,
        `${acked.length}/${total}`,
        f1(acked.length / ((wallEnd - wallStart) / 1000)),
        f1(measured / ((lastAdmit - wallStart) / 1000)),
        show(pct(rp, 0.5)),
        show(pct(rp, 0.99)),
        show(pct(sp, 0.5)),
        show(pct(lp, 0.5)),
        show(pct(lp, 0.99)),
        `${measured}/${total}`,
        share,
        ms((1000 * cpu) / Math.max(1, acked.length)),
        String(errors),
      ]);
      notes.push(
        `${rate}/s: ${total} submits offered over ${seconds} s; ${acked.length} acknowledged and ${measured} seen ADMITTED within ${WINDOW_S} s of the last one being due` +
          (stillOutstanding ? ` (${stillOutstanding} submits still unanswered then)` : '') +
          `; load average ${loadAvg()}.`,
      );
      console.log(`  ${rate}/s: ${acked.length} acknowledged, ${measured} ADMITTED seen, p50 ${show(pct(lp, 0.5))} p99 ${show(pct(lp, 0.99))}`);
      if (rate !== 500) await settle(server, ids, admin, 20_000); // let the 30 ms jobs finish
    }
    closing = true;
    dispose();
    await client.dispose();
    out(
      'Open loop, 1-slice MIG jobs (30 declared s at time scale 1000 = 30 ms real) into aurora-training (56 slices nominal, 112 with borrowing), ' +
        `${seconds} s per rate, one aurora MEMBER submitting over up to 64 keep-alive connections. Latency from the moment each submit was due ` +
        '(so queueing in a server that falls behind counts) to the ADMITTED event arriving at the subscriber; "server admit" uses the event\'s own timestamp. ' +
        `Percentiles are over all offered submits; one not seen admitted within ${WINDOW_S} s counts as "> ${WINDOW_S} s". On-CPU / waiting = share of the window the server\'s JS thread ran / was runnable but waited for a core (/proc/<pid>/schedstat); the rest it was idle (waiting for I/O or work). CPU per job = server process CPU time (all threads) in the window / acknowledged submits (it includes admitting, starting and finishing them).`,
    );
    out();
    out(table(['offered', 'acked', 'acked/s', 'admitted/s', 'submit answer p50', 'p99', 'server admit p50', 'ADMITTED seen p50', 'p99', 'measured', 'server thread on-CPU / waiting for CPU', 'server CPU ms per acked job', 'errors'], rows));
    out();
    for (const n of notes) out(`- ${n}`);
    out();
  } finally {
    closing = true;
    reportServerErrors(server);
    await server.stop();
  }
}

// ─────────────────────────── part 3: N position subscribers ───────────────────────────

interface Part3Row {
  n: number;
  seconds: { submit: number; subscribe: number };
  rssBefore: number;
  rssAfter: number;
  received: number;
  fromTrigger: number[];
  fromAdmit: number[];
  admitted: number;
  waitedMs: number;
  sockets: number;
  failed: string[];
  live: number;
  cpu: { subscribe: number; delivery: number };
}

async function part3Round(n: number, budgetMs: number): Promise<Part3Row> {
  // 32 H100s in the cohort: the first 32 one-GPU jobs are admitted (aurora borrows borealis's
  // idle half), the other n wait in one queue. Seeded in the database before start.
  const t0 = performance.now();
  const seed: SeedJob[] = Array.from({ length: n + 32 }, (_, i) => ({ name: `pos-${i}`, flavor: 'h100-80g', gpus: 1, seconds: 1e6 }));
  const server = await startFairway(60, seed);
  try {
    const ids = await auroraIds(server);
    const member = server.tokens['aurora-research/MEMBER']!;
    const admin = server.tokens['aurora-research/TENANT_ADMIN']!;
    const counts = await settle(server, ids, admin, 60_000);
    const submitSeconds = (performance.now() - t0) / 1000;
    const running = await gql(server, admin, `query($t: ID!) { jobs(tenantId: $t, filter: { states: [ADMITTED, RUNNING] }, first: 100) { edges { node { id } } } }`, { t: ids.tenantId });
    const admittedIds: string[] = running.jobs.edges.map((e: { node: { id: string } }) => e.node.id);
    const admittedSet = new Set(admittedIds);
    const watched = server.seeded.filter((id) => !admittedSet.has(id)).slice(0, n);
    console.log(`  n=${n}: ${server.seeded.length} jobs seeded, server up and settled after ${submitSeconds.toFixed(1)} s (${counts.admitted} admitted, ${counts.pending} pending); subscribing ${watched.length}`);
    await sleep(500);
    const rssBefore = rssKiB(server.pid);

    // One socket per subscriber (each its own graphql-ws client and connection_init).
    const clients: Client[] = [];
    const initial = new Map<number, number | null>();
    const changedAt: number[] = new Array(watched.length).fill(NaN);
    let triggerAt = Infinity;
    const firstValue: Promise<void>[] = [];
    const failed: string[] = [];
    const disposers: (() => void)[] = [];
    const s0 = performance.now();
    const cpuSub0 = cpuSeconds(server.pid);
    const BATCH = 50;
    for (let b = 0; b < watched.length; b += BATCH) {
      const batch: Promise<void>[] = [];
      for (let i = b; i < Math.min(watched.length, b + BATCH); i++) {
        const client = wsClient(server, member);
        clients.push(client);
        batch.push(
          new Promise<void>((resolve) => {
            disposers.push(
              client.subscribe<{ jobPosition: { state: string; position: { inQueue: number | null } | null } }>(
                { query: `subscription($id: ID!) { jobPosition(id: $id) { state position { inQueue queueLength } } }`, variables: { id: watched[i] } },
                {
                  next: (m) => {
                    const now = performance.timeOrigin + performance.now();
                    if (m.errors) {
                      if (!initial.has(i)) failed.push(JSON.stringify(m.errors).slice(0, 200));
                      initial.set(i, null);
                      return resolve();
                    }
                    const u = m.data!.jobPosition;
                    const value = u.state === 'PENDING' ? (u.position?.inQueue ?? null) : -1;
                    if (!initial.has(i)) {
                      initial.set(i, value);
                      resolve();
                    } else if (now >= triggerAt && Number.isNaN(changedAt[i]!) && value !== initial.get(i)) {
                      changedAt[i] = now;
                    }
                  },
                  error: (e) => {
                    if (!initial.has(i)) {
                      failed.push(e instanceof Error ? e.message : String((e as { reason?: string }).reason ?? (e as { code?: number }).code ?? e));
                      initial.set(i, null);
                    }
                    resolve();
                  },
                  complete: () => undefined,
                },
              ),
            );
          }),
        );
      }
      firstValue.push(...batch);
      await Promise.all(batch);
    }
    await Promise.all(firstValue);
    const subscribeSeconds = (performance.now() - s0) / 1000;
    const cpuSubscribe = cpuSeconds(server.pid) - cpuSub0;
    await sleep(1000);
    const rssAfter = rssKiB(server.pid);
    console.log(`  n=${n}: ${watched.length} subscribed in ${subscribeSeconds.toFixed(1)} s; RSS ${f0(rssBefore / 1024)} → ${f0(rssAfter / 1024)} MiB`);

    // Heads get admitted: watch the tenant's ADMITTED events for their timestamps.
    const watcher = wsClient(server, admin);
    const admitted: number[] = [];
    const watcherReady = new Promise<void>((r) => watcher.on('connected', () => r()));
    const disposeWatcher = watcher.subscribe<{ tenantEvents: { kind: string; at: string } }>(
      { query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind at } }`, variables: { t: ids.tenantId } },
      { next: (m) => m.data?.tenantEvents.kind === 'ADMITTED' && admitted.push(Date.parse(m.data.tenantEvents.at)), error: () => undefined, complete: () => undefined },
    );
    await watcherReady;
    await sleep(200);

    // The trigger: cancel 1 running job; the head is admitted and everyone moves up one.
    const CANCEL = 1;
    const cpuDel0 = cpuSeconds(server.pid);
    triggerAt = performance.timeOrigin + performance.now();
    await Promise.all(admittedIds.slice(0, CANCEL).map((id) => gql(server, admin, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id })));
    const waitStart = Date.now();
    const deadline = waitStart + budgetMs;
    const liveIdx = watched.map((_, i) => i).filter((i) => initial.get(i) !== null && initial.get(i) !== undefined);
    while (Date.now() < deadline && liveIdx.some((i) => Number.isNaN(changedAt[i]!))) await sleep(100);
    const waitedMs = Date.now() - waitStart;
    const cpuDelivery = cpuSeconds(server.pid) - cpuDel0;
    const headAdmittedAt = admitted.length ? Math.min(...admitted) : NaN;
    const got = liveIdx.map((i) => changedAt[i]!).filter((t) => !Number.isNaN(t));
    const fromTrigger = got.map((t) => t - triggerAt).sort((a, b) => a - b);
    const fromAdmit = got.map((t) => t - headAdmittedAt).sort((a, b) => a - b);
    console.log(`  n=${n}: ${got.length}/${watched.length} saw their position change; p99 ${ms(pct(fromTrigger, 0.99))} ms after the trigger`);

    disposeWatcher();
    for (const d of disposers) d();
    await Promise.all([watcher, ...clients].map((c) => c.dispose()));
    return {
      n: watched.length,
      seconds: { submit: submitSeconds, subscribe: subscribeSeconds },
      rssBefore,
      rssAfter,
      received: got.length,
      fromTrigger,
      fromAdmit,
      admitted: admitted.length,
      waitedMs,
      sockets: clients.length,
      failed,
      live: liveIdx.length,
      cpu: { subscribe: cpuSubscribe, delivery: cpuDelivery },
    };
  } finally {
    reportServerErrors(server);
    await server.stop();
  }
}

async function part3(sizes: number[], deadline: number): Promise<void> {
  out('## 3. Concurrent `jobPosition` subscribers while the heads are admitted');
  out();
  const rows: Part3Row[] = [];
  const skipped: string[] = [];
  const done: { n: number; setupMs: number; scaledMs: number }[] = [];
  for (const n of sizes) {
    const left = deadline - Date.now();
    // Subscribing and delivering cost the server per subscriber (SQL + auth + a position computation
    // that itself grows with the queue): extrapolate that part with the growth measured between the
    // last two sizes (exponent between 1 and 2; 1.5 with a single size), setup linearly.
    const last = done.at(-1);
    let estimate = 0;
    let exponent = 1.5;
    if (last) {
      const before = done.at(-2);
      if (before) exponent = Math.min(2, Math.max(1, Math.log(last.scaledMs / before.scaledMs) / Math.log(last.n / before.n)));
      estimate = last.setupMs * (n / last.n) + last.scaledMs * (n / last.n) ** exponent;
    }
    if (last && estimate > left) {
      skipped.push(
        `n=${n} not run: extrapolated from n=${last.n} (growth exponent ${exponent.toFixed(2)}) it would take ~${(estimate / 1000).toFixed(0)} s, over the time left in the ~5-minute budget (${Math.max(0, left / 1000).toFixed(0)} s). ` +
          `Run it alone with \`BENCH_PARTS=3 BENCH_SUBSCRIBERS=${n} BENCH_BUDGET_S=900 npm run bench:api\`.`,
      );
      continue;
    }
    const started = Date.now();
    const row = await part3Round(n, Math.max(20_000, Math.min(300_000, left - 20_000)));
    rows.push(row);
    const scaledMs = row.seconds.subscribe * 1000 + row.waitedMs;
    done.push({ n, setupMs: Date.now() - started - scaledMs, scaledMs });
  }
  out(
    'One queue (aurora-training), n + 32 one-GPU H100 jobs seeded in the database before start (setup = seeding + server start + first cycle); 16 admitted (aurora\'s nominal), the rest pending. ' +
      'One graphql-ws socket per subscriber (one client each; no multiplexing), each `jobPosition(id)` of its own pending job, subscribed 50 at a time. ' +
      'Trigger: cancel 1 running job, so the queue head is admitted and every watched position changes by one. ' +
      'Latency to the first changed value each subscriber receives, from the trigger (cancel sent) and from the first head\'s ADMITTED timestamp. RSS = server VmRSS.',
  );
  out();
  out(
    table(
      ['subscribers', 'setup s', 'subscribe s', 'server CPU s', 'delivery CPU s', 'RSS before MiB', 'after MiB', 'KiB/subscriber', 'changed/n', 'from trigger p50 ms', 'p99 ms', 'max ms', 'from ADMITTED p50 ms', 'p99 ms'],
      rows.map((r) => [
        String(r.n),
        r.seconds.submit.toFixed(1),
        r.seconds.subscribe.toFixed(1),
        r.cpu.subscribe.toFixed(1),
        r.cpu.delivery.toFixed(1),
        f0(r.rssBefore / 1024),
        f0(r.rssAfter / 1024),
        f1((r.rssAfter - r.rssBefore) / r.n),
        `${r.received}/${r.live}${r.received < r.live ? ` (gave up after ${(r.waitedMs / 1000).toFixed(0)} s)` : ''}`,
        ms(pct(r.fromTrigger, 0.5)),
        ms(pct(r.fromTrigger, 0.99)),
        ms(r.fromTrigger.at(-1) ?? NaN),
        ms(pct(r.fromAdmit, 0.5)),
        ms(pct(r.fromAdmit, 0.99)),
      ]),
    ),
  );
  out();
  for (const r of rows) {
    if (r.failed.length) out(`- n=${r.n}: ${r.failed.length} subscriptions failed (first: ${r.failed[0]}).`);
  }
  for (const s of skipped) out(`- ${s}`);
  out();
}

// ─────────────────────────── main ───────────────────────────

async function main(): Promise<void> {
  const parts = new Set((process.env.BENCH_PARTS ?? '1,2,3').split(',').map((s) => s.trim()));
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const sizes = (process.env.BENCH_SUBSCRIBERS ?? '500,1000,5000').split(',').map(Number).filter((n) => n > 0);
  const resultsFile = process.env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS-api.md');
  const started = Date.now();
  // The whole run should stay around five minutes (5.5 at most); part 3 sizes that would not fit are dropped.
  const deadline = started + Number(process.env.BENCH_BUDGET_S ?? 330) * 1000;
  const cpu = os.cpus();
  out('# Fairway API benchmark');
  out();
  out(`Command: \`npm run bench:api\`${process.env.BENCH_PARTS || process.env.BENCH_SUBSCRIBERS || process.env.BENCH_SECONDS ? ` (BENCH_PARTS=${[...parts].join(',')} BENCH_SECONDS=${seconds} BENCH_SUBSCRIBERS=${sizes.join(',')})` : ''}  `);
  out(`Date: ${new Date().toISOString()}  `);
  out(`Machine: ${cpu.length} × ${cpu[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}  `);
  out(`Load average at start (1/5/15 min): ${loadAvg()} — the machine is shared; other processes' CPU use inflates every latency below.  `);
  out(`Code: ${gitDescribe()}  `);
  out('Server: `node --import tsx src/main.ts` (what `npm start` runs), SQLite in a temp dir, simulated cluster, in-memory events, NODE_ENV=production, FAIRWAY_DEMO_TRICKLE=false; a fresh server per part.');
  out();
  if (parts.has('1')) await part1(seconds);
  if (parts.has('2')) await part2(seconds);
  if (parts.has('3')) await part3(sizes, deadline);
  out(`Total bench time: ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end: ${loadAvg()}.`);
  sharedAgent.destroy();
  if (resultsFile) {
    const previous = fs.existsSync(resultsFile) ? fs.readFileSync(resultsFile, 'utf8') : '';
    const notes = /<!-- notes -->[\s\S]*$/.exec(previous)?.[0];
    fs.writeFileSync(resultsFile, `${report.join('\n')}\n${notes ? `\n${notes}` : ''}`);
    console.log(`\nwritten to ${path.relative(process.cwd(), resultsFile)}`);
  }
}

if (process.argv.includes('--baseline-server')) {
  runBaselineServer().catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  main().then(
    () => process.exit(0),
    async (error) => {
      console.error(error);
      await Promise.all([...live].map((stop) => stop()));
      process.exit(1);
    },
  );
}
