// One burst: a fresh gateway (Kubernetes backend against the test API server, or the simulated
// cluster), a queue whose quota admits every job, N jobs of one shape (one-GPU jobs, 2–4-node
// gangs, or a custom workload kind: bench/kube/workloads.ts) submitted through the graph with C in
// flight, and what it took until every job's workload object (its Job, or its JobSet / PyTorchJob /
// RayJob / RayCluster) existed (or, simulated, every job had started). Figures are computed here
// (the cluster side in measure.ts); kube.ts prints them.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { post, sleep } from '../api/load-client.js';
import { cpuSeconds, sched } from '../api/process-stats.js';
import { startTestCluster, type TestCluster } from './cluster.js';
import { type Gateway, GatewayDb, startGateway } from './gateway.js';
import { firstObjectAt, type KubeFigures, kubeFigures, TENANT_NS, workloadCreates } from './measure.js';
import { burstGpus, type Shape, submitInput, workloadObjectKind } from './workloads.js';

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
  /** What every job is (workloads.ts); the simulated baseline runs 'single' only. */
  shape: Shape;
}

export interface BurstResult {
  backend: BackendKind;
  shape: Shape;
  jobs: number;
  /** First submit sent → the last job's workload object created (Kubernetes) or started (simulated), ms. */
  wallMs: number;
  /** First submit sent → last submit answered, ms. */
  submitMs: number;
  /**
   * Admission (jobs.admission.at) → the job's first object created (API server write log `at`: its Job,
   * a gang's headless Service, a custom kind's object); simulated: → STARTED event.
   */
  toBackendMs: number[];
  /** Admission → STARTED event in the gateway's database (Kubernetes: all its pods Running, seen by the
   * informer).
   */
  toStartedMs: number[];
  /** Submit answered → first object created / started, per job. */
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
  kube?: KubeFigures;
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
    if (o.backend === 'simulated' && o.shape !== 'single')
      throw new Error('the simulated baseline runs one-GPU jobs only');
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
    const gpus = burstGpus(o.shape, o.jobs);
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
        const rq = cluster.kube.objects('ResourceQuota', TENANT_NS)[0];
        resourceQuotaGpus = String(rq?.spec?.hard?.['requests.nvidia.com/gpu'] ?? '');
        if (Number(resourceQuotaGpus) >= gpus || Date.now() > deadline) break;
        await sleep(100);
      }
    }
    db = new GatewayDb(gw.dataDir);
    const kube = cluster?.kube;
    const writes0 = kube?.writes.length ?? 0;
    const requests0 = kube?.requests ?? 0;
    // STARTED events of this burst's jobs (the seeded demo may have its own).
    const started0 = db.count('STARTED');
    const startedNow = () => db!.count('STARTED') - started0;

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
          try {
            const d = await gql(agent, gw.url, member, SUBMIT, { in: submitInput(o.shape, i) });
            answeredAt.set(decodeJobId(d.submitJob.id), Date.now());
          } catch (error) {
            if (errors.length < 5) errors.push(String(error).slice(0, 300));
          }
        }
      }),
    ).then(() => Date.now());

    // Done when every job has its workload object (Kubernetes: its Job, or the custom object) or has
    // started (simulated).
    const objectKind = workloadObjectKind(o.shape);
    const jobCreates = () => (kube ? workloadCreates(kube.writes.slice(writes0), o.shape) : []);
    const deadline = t0 + o.timeoutMs;
    let doneAt = NaN;
    for (;;) {
      await sleep(50);
      const creates = kube ? jobCreates() : [];
      if (kube ? creates.length >= o.jobs : startedNow() >= o.jobs) {
        doneAt = kube ? Math.max(...creates.map((w) => w.at)) : Date.now();
        break;
      }
      if (Date.now() > deadline) {
        errors.push(
          `timed out after ${o.timeoutMs} ms: ${kube ? `${creates.length} ${objectKind}s created` : `${startedNow()} started`} of ${o.jobs}`,
        );
        doneAt = Date.now();
        break;
      }
    }
    const submitEnd = await submitting;
    const cpu1 = cpuSeconds(gw.pid);
    const sched1 = sched(gw.pid);
    const bench1 = cpuNow();
    // Kubernetes: the pods start after the objects exist (a custom kind's after its controller made
    // them); wait for the STARTED events too, then let trailing writes land.
    if (kube) {
      const until = Date.now() + 30_000;
      while (startedNow() < o.jobs && Date.now() < until) await sleep(100);
      const started = startedNow();
      if (started < o.jobs)
        errors.push(`${started} of ${o.jobs} jobs STARTED 30 s after the last ${objectKind}`);
      await sleep(1000);
    }

    const times = db.times();
    const createdAt = kube ? firstObjectAt(kube.writes.slice(writes0)) : new Map<string, number>();
    const toBackendMs: number[] = [];
    const toStartedMs: number[] = [];
    const submitToBackendMs: number[] = [];
    const submitToAdmissionMs: number[] = [];
    for (const [id, t] of times) {
      const answered = answeredAt.get(id);
      if (answered === undefined) continue; // not this burst's
      const backendAt = kube ? createdAt.get(id) : t.startedAt;
      if (backendAt !== undefined) toBackendMs.push(backendAt - t.admittedAt);
      if (t.startedAt !== undefined) toStartedMs.push(t.startedAt - t.admittedAt);
      if (backendAt !== undefined) submitToBackendMs.push(backendAt - answered);
      submitToAdmissionMs.push(t.admittedAt - answered);
    }
    const result: BurstResult = {
      backend: o.backend,
      shape: o.shape,
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
    if (kube)
      result.kube = kubeFigures(kube, o.shape, { writes: writes0, requests: requests0 }, resourceQuotaGpus);
    return result;
  } finally {
    db?.close();
    agent.destroy();
    await gateway?.stop();
    await cluster?.kube.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
