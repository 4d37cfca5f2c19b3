// The gateway a phase of bench:logs measures and its jobs: started as `npm start` runs it
// (bench/kube/gateway.ts: `node --import tsx src/main.ts`, NODE_ENV=production, SQLite in a temp
// dir, the demo seeded), the simulated cluster at the time scale that makes the jobs' rank-0 pods
// write the asked line rate, the caps that would refuse one token's followers raised; then N
// one-GPU jobs of aurora's member, submitted through the graph and waited for until RUNNING.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_RATE_BUDGETS } from '../../src/config/sections/rate-limits.js';
import { DEFAULT_WEBSOCKET_CONFIG } from '../../src/config/sections/websocket.js';
import { stepMsOf } from '../../src/core/logs/simulated-log.js';
import { post, sleep } from '../api/load-client.js';
import { type Gateway, startGateway } from '../kube/gateway.js';
import { IMAGE } from '../kube/workloads.js';

/** A job without a declared duration: a step (one rank-0 line) every 30 declared seconds, and no end. */
export const STEP_MS = stepMsOf({ expectedDurationMs: null });

/** The time scale at which `jobs` single-pod jobs write `rate` lines a second in all (rank 0: one a step). */
export const timeScaleFor = (rate: number, jobs: number) => (STEP_MS * rate) / jobs / 1000;

/** Real ms between two lines of one job at that scale. */
export const lineEveryMs = (timeScale: number) => STEP_MS / timeScale;

/** Followers are opened this many at a time (each socket is half-open until its connection_init). */
export const OPEN_BATCH = 50;

/**
 * The gateway's caps (websocket.ts, rate-limits.ts) that one token's `followers` sockets and
 * subscriptions would pass at their defaults, each raised to what the bench needs; the others stay
 * at their defaults, rate limits on. (A subscription start costs 1 point of the token's burst; the
 * submits and polls before are regained during the 12 s the bench measures the gateway alone.)
 */
export function capsFor(followers: number): { env: Record<string, string>; raised: string[] } {
  const ws = DEFAULT_WEBSOCKET_CONFIG;
  const caps: [string, number, number][] = [
    // [variable, default, needed]
    ['FAIRWAY_WS_MAX_CONNECTIONS_PER_PRINCIPAL', ws.maxConnectionsPerPrincipal, followers],
    ['FAIRWAY_WS_MAX_CONNECTIONS_PER_TENANT', ws.maxConnectionsPerTenant, followers],
    ['FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL', ws.maxSubscriptionsPerPrincipal, followers],
    ['FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_TENANT', ws.maxSubscriptionsPerTenant, followers],
    ['FAIRWAY_WS_MAX_HALF_OPEN_PER_IP', ws.maxHalfOpenPerIp, OPEN_BATCH],
    ['FAIRWAY_RATE_TOKEN_BURST', DEFAULT_RATE_BUDGETS.tokenBurst, followers],
    ['FAIRWAY_RATE_TENANT_BURST', DEFAULT_RATE_BUDGETS.tenantBurst, followers],
  ];
  const env: Record<string, string> = { FAIRWAY_RATE_LIMITS: 'true' };
  const raised: string[] = [];
  // BENCH_LOG_DEFAULT_CAPS=true: leave them all at their defaults (to see what they refuse).
  if (process.env.BENCH_LOG_DEFAULT_CAPS === 'true') return { env, raised };
  for (const [key, byDefault, needed] of caps) {
    if (needed <= byDefault) continue;
    env[key] = String(needed);
    raised.push(`${key}=${needed} (default ${byDefault})`);
  }
  return { env, raised };
}

export interface Setup {
  gateway: Gateway;
  dir: string;
  agent: http.Agent;
  member: string;
  /** The jobs' global ids, in submit order. */
  jobIds: string[];
  /** Per job: Job.startedAt (ms). */
  startedAt: Map<string, number>;
  gql<T = any>(token: string, query: string, variables?: Record<string, unknown>): Promise<T>;
  close(): Promise<void>;
}

export async function setUp(o: {
  jobs: number;
  timeScale: number;
  env: Record<string, string>;
}): Promise<Setup> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-bench-logs-'));
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  let gateway: Gateway | undefined;
  try {
    // The demo's 4 H100 nodes are partly taken by its own jobs: one more node per 8 bench jobs.
    gateway = await startGateway(
      dir,
      { FAIRWAY_SIM_TIME_SCALE: String(o.timeScale), ...o.env },
      Math.ceil(o.jobs / 8),
    );
    const gw = gateway;
    const gql = async <T = any>(token: string, query: string, variables: Record<string, unknown> = {}) => {
      const res = await post(agent, new URL(gw.url), token, JSON.stringify({ query, variables }));
      const body = JSON.parse(res.text) as { data?: T; errors?: unknown[] };
      if (body.errors?.length || !body.data)
        throw new Error(`GraphQL error (${res.status}): ${res.text.slice(0, 500)}`);
      return body.data;
    };
    const admin = gw.tokens['platform/PLATFORM_ADMIN']!;
    const member = gw.tokens['aurora-research/MEMBER']!;
    const tenant = await gql(
      gw.tokens['aurora-research/TENANT_ADMIN']!,
      `{ tenant(slug: "aurora-research") { queues { id } } }`,
    );
    // aurora-training's nominal H100s: the demo's 16 and the bench's jobs.
    await gql(
      admin,
      `mutation($q: ID!, $quota: QuotaInput!) { setQuota(queueId: $q, quota: $quota) { id } }`,
      {
        q: tenant.tenant.queues[0].id,
        quota: { flavor: 'h100-80g', nominal: 16 + o.jobs },
      },
    );
    const jobIds: string[] = [];
    for (let i = 0; i < o.jobs; i++) {
      const d = await gql(member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          name: `bench-logs-${i}`,
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          // No declared duration: 30-s steps, and the run does not end by itself.
          container: { image: IMAGE, command: ['python', 'train.py'] },
        },
      });
      jobIds.push(d.submitJob.id);
    }
    const startedAt = new Map<string, number>();
    const deadline = Date.now() + 60_000;
    // One query for all of them (aliases j0, j1, …): a poll costs one point of the member's bucket.
    const poll = `query(${jobIds.map((_, i) => `$j${i}: ID!`).join(', ')}) { ${jobIds
      .map((_, i) => `j${i}: node(id: $j${i}) { ... on Job { state startedAt } }`)
      .join(' ')} }`;
    const vars = Object.fromEntries(jobIds.map((id, i) => [`j${i}`, id]));
    for (;;) {
      const d = await gql(member, poll, vars);
      const states = jobIds.map((_, i) => d[`j${i}`] as { state: string; startedAt: string });
      const running = states.filter((s) => s.state === 'RUNNING');
      if (running.length === jobIds.length) {
        states.forEach((s, i) => startedAt.set(jobIds[i]!, Date.parse(s.startedAt)));
        break;
      }
      if (Date.now() > deadline)
        throw new Error(
          `${running.length} of ${jobIds.length} jobs RUNNING after 60 s: ${states.map((s) => s.state).join(' ')}`,
        );
      await sleep(500);
    }
    const started = gateway;
    return {
      gateway: started,
      dir,
      agent,
      member,
      jobIds,
      startedAt,
      gql,
      async close() {
        agent.destroy();
        await started.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    agent.destroy();
    await gateway?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
