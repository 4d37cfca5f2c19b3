// One burst: a fresh gateway (Kubernetes backend against the test API server, or the simulated
// cluster), a queue whose quota admits every job, N one-GPU jobs submitted through the graph
// with C in flight, and what it took until every job's Job object existed (or, simulated, every
// job had started). Figures are computed here; kube.ts prints them.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { post, sleep } from '../api/load-client.js';
import { cpuSeconds, sched } from '../api/process-stats.js';
import { startTestCluster, type TestCluster } from './cluster.js';
import { type Gateway, GatewayDb, startGateway } from './gateway.js';

export type BackendKind = 'kubernetes' | 'simulated';

export interface BurstOptions {
  backend: BackendKind;
  jobs: number;
  concurrency: number;
  nodes: number;
  gpusPerNode: number;
  timeoutMs: number;
  /** At most one pass of the test server's control loop per this many ms (0: a pass after every change, as
   * written).
   */
  controllerPaceMs: number;
  /**
   * Pods per job (8 GPUs each, one node each) when the burst is of gangs: job i has
   * `gangPods(i)` pods; absent: one-GPU single-pod jobs.
   */
  gangPods?: (i: number) => number;
}

/** GPUs the burst asks for in all. */
export function burstGpus(o: Pick<BurstOptions, 'jobs' | 'gangPods'>): number {
  if (!o.gangPods) return o.jobs;
  let gpus = 0;
  for (let i = 0; i < o.jobs; i++) gpus += 8 * o.gangPods(i);
  return gpus;
}

export interface BurstResult {
  backend: BackendKind;
  /** 'single': one-GPU jobs; 'gangs': multi-node jobs (gangPods). */
  shape: 'single' | 'gangs';
  jobs: number;
  /** First submit sent → the last job's Job created (Kubernetes) or started (simulated), ms. */
  wallMs: number;
  /** First submit sent → last submit answered, ms. */
  submitMs: number;
  /** Admission (jobs.admission.at) → Job created (API server write log `at`); simulated: → STARTED event. */
  toBackendMs: number[];
  /** Admission → STARTED event in the gateway's database (Kubernetes: its pods Running, seen by the
   * informer).
   */
  toStartedMs: number[];
  /** Submit answered → Job created / started, per job. */
  submitToBackendMs: number[];
  /** Submit answered → admission (the scheduler's cycle), per job. */
  submitToAdmissionMs: number[];
  gatewayCpuS: number;
  /** The JS thread's on-CPU and waiting-for-CPU ns over the burst (/proc/<pid>/schedstat). */
  gatewaySched: { runNs: number; waitNs: number };
  /** This (bench) process: the load client, plus the test API server and its controllers for the Kubernetes
   * run.
   */
  benchCpuS: number;
  /** Kubernetes only. */
  kube?: {
    writes: number;
    jobWrites: number;
    writesByKindVerb: Record<string, number>;
    refused: number;
    requests: number;
    invalid: number;
    controllerProblems: number;
    jobsExisting: number;
    resourceQuotaGpus: string;
    setupWrites: number;
  };
  clusterGpus: number;
  errors: string[];
}

const decodeJobId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;

async function gql<T = any>(
  agent: http.Agent,
  url: string,
  token: string,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<T> {
  const res = await post(agent, new URL(url), token, JSON.stringify({ query, variables }));
  const body = JSON.parse(res.text) as { data?: T; errors?: unknown[] };
  if (body.errors?.length || !body.data)
    throw new Error(`GraphQL error (${res.status}): ${res.text.slice(0, 500)}`);
  return body.data;
}

const SUBMIT = `mutation Submit($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
/** aurora-research's data boundaries allow nvcr.io/nvidia. */
const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';

const cpuNow = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
};

export async function runBurst(o: BurstOptions): Promise<BurstResult> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `fairway-bench-kube-${o.backend}-`));
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency + 4 });
  let cluster: TestCluster | undefined;
  let gateway: Gateway | undefined;
  let db: GatewayDb | undefined;
  try {
    if (o.backend === 'kubernetes') {
      cluster = await startTestCluster(dir, o.nodes, o.gpusPerNode, o.controllerPaceMs);
      gateway = await startGateway(dir, {
        FAIRWAY_BACKEND: 'kubernetes',
        FAIRWAY_KUBECONFIG: cluster.kubeconfigPath,
        FAIRWAY_KUBERNETES_SETTINGS: cluster.settingsPath,
      });
    } else {
      if (o.gpusPerNode !== 8) throw new Error('the simulated baseline uses the demo flavor’s 8-GPU nodes');
      // The demo has 4 simulated H100 nodes; the rest are added so both clusters have the same H100s.
      // Time scale 1: the declared hour lasts an hour, so nothing finishes during the burst.
      gateway = await startGateway(dir, { FAIRWAY_SIM_TIME_SCALE: '1' }, Math.max(0, o.nodes - 4));
    }
    const gw = gateway;
    const admin = gw.tokens['platform/PLATFORM_ADMIN']!;
    const member = gw.tokens['aurora-research/MEMBER']!;
    const pools = await gql(agent, gw.url, admin, `{ nodePools { nodes { flavor gpus } } }`);
    const clusterGpus = (pools.nodePools as { nodes: { flavor: string; gpus: number }[] }[])
      .flatMap((p) => p.nodes)
      .filter((n) => n.flavor === 'h100-80g')
      .reduce((s, n) => s + n.gpus, 0);
    const gpus = burstGpus(o);
    if (clusterGpus < gpus)
      throw new Error(`${o.backend}: the cluster has ${clusterGpus} H100s for ${gpus} GPUs of jobs`);
    const tenant = await gql(
      agent,
      gw.url,
      gw.tokens['aurora-research/TENANT_ADMIN']!,
      `{ tenant(slug: "aurora-research") { queues { id name } } }`,
    );
    const queueId = tenant.tenant.queues[0].id as string;
    // As a platform admin: aurora-training's nominal H100 quota covers the whole burst (the demo gives it
    // 16).
    await gql(
      agent,
      gw.url,
      admin,
      `mutation($q: ID!, $quota: QuotaInput!) { setQuota(queueId: $q, quota: $quota) { id } }`,
      { q: queueId, quota: { flavor: 'h100-80g', nominal: gpus } },
    );
    let resourceQuotaGpus = '';
    if (cluster) {
      // The tenant's ResourceQuota (the most it can ever hold) must not cap the burst either.
      const deadline = Date.now() + 10_000;
      for (;;) {
        const rq = cluster.kube.objects('ResourceQuota', 'fairway-aurora-research')[0];
        resourceQuotaGpus = String(rq?.spec?.hard?.['requests.nvidia.com/gpu'] ?? '');
        if (Number(resourceQuotaGpus) >= gpus || Date.now() > deadline) break;
        await sleep(100);
      }
    }
    db = new GatewayDb(gw.dataDir);
    const kube = cluster?.kube;
    const writes0 = kube?.writes.length ?? 0;
    const requests0 = kube?.requests ?? 0;

    // ── the burst ──
    const t0 = Date.now();
    const cpu0 = cpuSeconds(gw.pid);
    const sched0 = sched(gw.pid);
    const bench0 = cpuNow();
    const answeredAt = new Map<string, number>();
    const errors: string[] = [];
    let next = 0;
    const submitting = Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        for (;;) {
          const i = next++;
          if (i >= o.jobs) return;
          const input = {
            name: `bench-${i}`,
            podSets: [
              o.gangPods
                ? { count: o.gangPods(i), gpusPerPod: 8, flavors: ['h100-80g'] }
                : { gpusPerPod: 1, flavors: ['h100-80g'] },
            ],
            expectedDurationSeconds: 3600,
            container: { image: IMAGE, command: ['python', 'train.py'] },
          };
          try {
            const d = await gql(agent, gw.url, member, SUBMIT, { in: input });
            answeredAt.set(decodeJobId(d.submitJob.id), Date.now());
          } catch (error) {
            if (errors.length < 5) errors.push(String(error).slice(0, 300));
          }
        }
      }),
    ).then(() => Date.now());

    // Done when every job has its Job object (Kubernetes) or has started (simulated).
    const jobCreates = () =>
      kube
        ? kube.writes
            .slice(writes0)
            .filter((w) => w.kind === 'Job' && w.verb === 'create' && w.status === 201)
        : [];
    const deadline = t0 + o.timeoutMs;
    let doneAt = NaN;
    for (;;) {
      await sleep(50);
      const creates = kube ? jobCreates() : [];
      if (kube ? creates.length >= o.jobs : db.count('STARTED') >= o.jobs) {
        doneAt = kube ? Math.max(...creates.map((w) => w.at)) : Date.now();
        break;
      }
      if (Date.now() > deadline) {
        errors.push(
          `timed out after ${o.timeoutMs} ms: ${kube ? `${creates.length} Jobs created` : `${db.count('STARTED')} started`} of ${o.jobs}`,
        );
        doneAt = Date.now();
        break;
      }
    }
    const submitEnd = await submitting;
    const cpu1 = cpuSeconds(gw.pid);
    const sched1 = sched(gw.pid);
    const bench1 = cpuNow();
    // Kubernetes: the pods start after the Jobs exist; wait for the STARTED events too, then let trailing
    // writes land.
    if (kube) {
      const until = Date.now() + 30_000;
      while (db.count('STARTED') < o.jobs && Date.now() < until) await sleep(100);
      await sleep(1000);
    }

    const times = db.times();
    const createdAt = new Map<string, number>();
    for (const w of jobCreates()) createdAt.set(w.name.replace(/^fw-/, '').replace(/-\d+$/, ''), w.at);
    const toBackendMs: number[] = [];
    const toStartedMs: number[] = [];
    const submitToBackendMs: number[] = [];
    const submitToAdmissionMs: number[] = [];
    for (const [id, t] of times) {
      const backendAt = kube ? createdAt.get(id) : t.startedAt;
      if (backendAt !== undefined) toBackendMs.push(backendAt - t.admittedAt);
      if (t.startedAt !== undefined) toStartedMs.push(t.startedAt - t.admittedAt);
      const answered = answeredAt.get(id);
      if (backendAt !== undefined && answered !== undefined) submitToBackendMs.push(backendAt - answered);
      if (answered !== undefined) submitToAdmissionMs.push(t.admittedAt - answered);
    }
    const result: BurstResult = {
      backend: o.backend,
      shape: o.gangPods ? 'gangs' : 'single',
      jobs: answeredAt.size,
      wallMs: doneAt - t0,
      submitMs: submitEnd - t0,
      toBackendMs,
      toStartedMs,
      submitToBackendMs,
      submitToAdmissionMs,
      gatewayCpuS: cpu1 - cpu0,
      gatewaySched: { runNs: sched1.runNs - sched0.runNs, waitNs: sched1.waitNs - sched0.waitNs },
      benchCpuS: bench1 - bench0,
      clusterGpus,
      errors,
    };
    if (kube) {
      const during = kube.writes.slice(writes0);
      const byKindVerb: Record<string, number> = {};
      for (const w of during)
        byKindVerb[`${w.kind} ${w.verb} ${w.status}`] =
          (byKindVerb[`${w.kind} ${w.verb} ${w.status}`] ?? 0) + 1;
      result.kube = {
        writes: during.length,
        jobWrites: during.filter((w) => w.kind === 'Job').length,
        writesByKindVerb: byKindVerb,
        refused: during.filter((w) => w.status >= 400).length,
        requests: kube.requests - requests0,
        invalid: kube.invalid.length,
        controllerProblems: kube.controllerProblems.length,
        jobsExisting: kube.objects('Job').length,
        resourceQuotaGpus,
        setupWrites: writes0,
      };
    }
    return result;
  } finally {
    db?.close();
    agent.destroy();
    await gateway?.stop();
    await cluster?.kube.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
