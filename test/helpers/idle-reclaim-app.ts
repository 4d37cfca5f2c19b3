// An app for the idle-reclaim tests: the seeded demo on a real port, a leader clock the test moves,
// the idle check every few ms, and a simulated cluster that samples no utilization of its own (the
// tests write probe samples themselves) and never starts jobs named "stuck-…" (admitted, not running).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportSPKI, generateKeyPair } from 'jose';
import type { BackendJob } from '../../src/backends/port.js';
import { SimulatedBackend } from '../../src/backends/simulated/simulated.js';
import type { IdleAction } from '../../src/core/governance/types.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { IsolationPolicyRow, JobProbeSample } from '../../src/persistence/governance/entities.js';
import { Job, JobEvent } from '../../src/persistence/jobs/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './database.js';
import { demoToken, testConfig } from './harness.js';
import { type LiveSubscription, liveSubscription, wsClient } from './live-subscription.js';
import { postGraphql } from './scheduler-app.js';

export const TIME_SCALE = 1000;
export const MIN = 60_000;
export const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');

/** Starts nothing named stuck-…: its job stays admitted and not running. */
class StallingBackend extends SimulatedBackend {
  override async start(job: BackendJob): Promise<void> {
    if (job.name.startsWith('stuck-')) return;
    return super.start(job);
  }
}

export interface IdleApp {
  app: FairwayApp;
  url: string;
  now: { value: number };
  errors: unknown[];
  token(tenant: string, role: DemoCredential['role']): string;
  gql<T = any>(
    bearer: string,
    query: string,
    variables?: Record<string, unknown>,
  ): Promise<{ data?: T; errors?: { message: string; extensions?: { code?: string } }[] }>;
  em(): ReturnType<typeof systemEntityManager>;
  tenantId(slug: string): Promise<string>;
  queueOf(slug: string): Promise<Queue>;
  /** Makes the tenant's queue governed by `policy` (or ungoverned with null), then rebuilds the leader's core. */
  govern(
    slug: string,
    governance: { isolationPolicy?: string | null; workloadType?: string | null; slaClass?: string | null },
  ): Promise<void>;
  /** A platform policy row (as setIsolationPolicy stores it): elastic limits, idle 30 declared minutes under
   * 10 %, not running 15.
   */
  policy(name: string, action: IdleAction): Promise<void>;
  /** Submits a job of `gpus` H100 GPUs (pods of 8) to the tenant's queue; returns its id. */
  submit(slug: string, name: string, gpus: number): Promise<string>;
  job(id: string): Promise<Job>;
  waitState(id: string, states: string[]): Promise<Job>;
  /** Probe samples of a job at the given instants (backend clock), as the probe writer stores them. */
  samples(jobId: string, readings: [at: number, gpu: number][]): Promise<void>;
  events(jobId: string): Promise<JobEvent[]>;
  close(): Promise<void>;
}

export async function startIdleApp(dialect: Dialect, idleCheckIntervalMs = 40): Promise<IdleApp> {
  const db: TestDatabase = await createTestDatabase(dialect);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-idle-'));
  const { publicKey } = await generateKeyPair('RS256');
  const config = testConfig({
    dataDir,
    database: db.database,
    oidc: { publicKeyPem: await exportSPKI(publicKey) },
  });
  const now = { value: Date.now() };
  const errors: unknown[] = [];
  const backend = new StallingBackend({
    timeScale: TIME_SCALE,
    now: () => now.value,
    utilizationIntervalMs: 0,
  });
  const app = await buildApp({
    config,
    now: () => now.value,
    backend,
    logError: (e) => errors.push(e),
    reauthCacheMs: 0,
    scheduler: { resyncIntervalMs: 150 },
    governance: { idleCheckIntervalMs },
  });
  const credentials = (await seedDemo(app.orm, dataDir, () => now.value))!;
  await app.scheduler.rebuild();
  const { url } = await app.listen(0, '127.0.0.1');
  const em = () => systemEntityManager(app.orm);
  const self: IdleApp = {
    app,
    url,
    now,
    errors,
    token: (tenant, role) => demoToken(credentials, tenant, role),
    gql: (bearer, query, variables) => postGraphql(url, bearer, query, variables),
    em,
    tenantId: async (slug) => (await em().findOneOrFail(Tenant, { slug })).id,
    queueOf: async (slug) => em().findOneOrFail(Queue, { tenant: { slug } }),
    async govern(slug, governance) {
      const e = em();
      const queue = await e.findOneOrFail(Queue, { tenant: { slug } });
      e.assign(queue, { isolationPolicy: null, workloadType: null, slaClass: null, ...governance });
      await e.flush();
      await app.scheduler.rebuild();
    },
    async policy(name, action) {
      const e = em();
      e.create(IsolationPolicyRow, {
        name,
        description: `test policy (${action})`,
        level: 'ELASTIC',
        coefficients: {
          lend: { min: 0.5, base: 1, max: 1 },
          borrow: null,
          minRunBeforeReclaimMs: 0,
          reclaimGraceMs: MIN,
          preemptible: 'ANY',
          idle: { utilizationBelow: 0.1, idleForMs: 30 * MIN, notRunningForMs: 15 * MIN, action },
        },
        builtIn: false,
      });
      await e.flush();
    },
    async submit(slug, name, gpus) {
      const queue = await self.queueOf(slug);
      const res = await self.gql(
        demoToken(credentials, slug, 'TENANT_ADMIN'),
        `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
        {
          in: {
            queueId: enc('Queue', queue.id),
            name,
            podSets: [{ count: gpus / 8, gpusPerPod: 8, flavors: ['h100-80g'] }],
          },
        },
      );
      if (res.errors) throw new Error(JSON.stringify(res.errors));
      return Buffer.from(res.data.submitJob.id, 'base64').toString().split(':')[1]!;
    },
    job: (id) => em().findOneOrFail(Job, { id }),
    async waitState(id, states) {
      const deadline = Date.now() + 8000;
      for (;;) {
        const job = await self.job(id);
        if (states.includes(job.state)) return job;
        if (Date.now() > deadline)
          throw new Error(`job ${job.name} is ${job.state}, not ${states.join('/')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async samples(jobId, readings) {
      const e = em();
      const job = await e.findOneOrFail(Job, { id: jobId });
      for (const [at, gpu] of readings)
        e.create(JobProbeSample, {
          job,
          tenant: job.tenant,
          at,
          gpuUtilization: gpu,
          memoryUtilization: null,
        });
      await e.flush();
    },
    events: (jobId) => em().find(JobEvent, { job: jobId }, { orderBy: { id: 'asc' } }),
    async close() {
      await app.close();
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return self;
}

/**
 * Until the subscription is live: a QUOTA_CHANGED of the tenant's queue is published (in process,
 * as the scheduler announces one) until it arrives, so no later event is missed.
 */
export async function whenLive(t: IdleApp, slug: string, values: readonly { kind: string }[]): Promise<void> {
  const tenantId = await t.tenantId(slug);
  const queueId = (await t.queueOf(slug)).id;
  const deadline = Date.now() + 10_000;
  while (!values.some((v) => v.kind === 'QUOTA_CHANGED')) {
    if (Date.now() > deadline) throw new Error(`the ${slug} subscription did not start`);
    t.app.events.publish('tenant-event', tenantId, { kind: 'QUOTA_CHANGED', queueId, at: t.now.value });
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The tenantEvents fields the idle and held reclaim tests look at. */
export const FLAG_EVENTS = `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId reason message flag { kind decision action forSeconds limitSeconds meanUtilization utilizationBelow policy } } }`;
export type FlagTenantEvent = {
  kind: string;
  jobId: string | null;
  reason: string | null;
  message: string | null;
  flag: Record<string, unknown> | null;
};

export interface BothTenantsListening {
  aurora: LiveSubscription<FlagTenantEvent>;
  borealis: LiveSubscription<FlagTenantEvent>;
  dispose(): Promise<void>;
}

/** aurora-research's and borealis-inference's tenantEvents over real sockets as `role`, both live before this returns. */
export async function listenToBothTenants(
  t: IdleApp,
  role: DemoCredential['role'],
): Promise<BothTenantsListening> {
  const clients: ReturnType<typeof wsClient>[] = [];
  const subscribe = async (slug: string) => {
    const client = wsClient(t.url, t.token(slug, role));
    clients.push(client);
    return liveSubscription<FlagTenantEvent>(
      client,
      FLAG_EVENTS,
      { t: enc('Tenant', await t.tenantId(slug)) },
      (d) => d.tenantEvents,
    );
  };
  const aurora = await subscribe('aurora-research');
  const borealis = await subscribe('borealis-inference');
  await whenLive(t, 'aurora-research', aurora.values);
  await whenLive(t, 'borealis-inference', borealis.values);
  return {
    aurora,
    borealis,
    dispose: async () => {
      for (const c of clients) await c.dispose();
    },
  };
}

/** Polls until `check` returns a value (not undefined/false), or fails with `what` after `timeoutMs`. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 8000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
