// Benchmark of the Kubernetes execution backend (not a test: nothing here asserts a
// time). Run: npm run bench:kube
//
// A burst of BENCH_JOBS one-GPU jobs (default 1,000) submitted through the graph as aurora's
// member (BENCH_CONCURRENCY in flight, default 32; image nvcr.io/nvidia/…, which aurora's data
// boundaries allow) to a gateway started as `npm start` runs it (`node --import tsx src/main.ts`,
// NODE_ENV=production, SQLite in a temp dir, the demo seeded before start), on each backend:
//   (1) FAIRWAY_BACKEND=kubernetes against the test API server of test/helpers/kube-api-server
//       (a test tool, used here as the cluster: every object written is validated with
//       kubernetes-models; its Job controller, scheduler and kubelet run what Fairway creates),
//       with BENCH_NODES × 8 H100 nodes (default 125 → 1,000 GPUs). Pods run until deleted.
//   (2) the baseline: the simulated cluster with the same H100s (time scale 1, declared hour).
// aurora-training's nominal H100 quota is set to the burst's GPUs first (setQuota, platform admin).
// Measured: objects written per job (every write the API server received during the burst, and
// the writes of the workload's own kind: Job, JobSet…), objects in the tenant namespace at the end;
// admission (jobs.admission.at, the scheduler's decision) → the job's first object created (the
// API server's write log) or → the simulated start; admission → STARTED event; wall time; the
// gateway's CPU time per job (/proc/<pid>/stat). The API server, its controllers and the load
// client share this bench process (its CPU is reported apart; the simulated run has only the
// client, so the difference is about the API server's share).
// The test server's control loop, as written, re-lists and deep-copies every Pod and Job after
// every change and matches every Job against every Pod; at 1,000 Jobs it takes the bench process
// and Fairway's requests wait behind it (303 of 1,000 Jobs created in 150 s). The bench therefore
// paces it (at most one run per BENCH_CONTROLLER_PACE_MS) and lets it read the stored objects
// without copies (bench/kube/cluster.ts; BENCH_CONTROLLER_PACE_MS=0 runs it as written).
//
// (3) with the Kubernetes backend, a second burst of BENCH_GANG_JOBS (default 100) multi-node jobs
//     of 2, 3 and 4 pods × 8 GPUs in turn (one node per pod): each a headless Service, an Indexed Job
//     and gated pods released to their nodes; admission → STARTED is then "all pods running".
// (4) with the Kubernetes backend, a burst of BENCH_KIND_JOBS (default 40) per custom workload kind
//     (workloadKind JOBSET, PYTORCH_JOB, RAY_JOB, RAY_CLUSTER), 2, 3, 4 GPU pods × 8 GPUs in turn (a
//     PyTorchJob's master is one of them; a RayJob / RayCluster has a head pod without GPU besides):
//     each one custom object, validated against its CRD, whose controller in the test API server
//     (crd-controllers/) makes the pods. Admission → "first object created" is then the custom object
//     (the write log), → STARTED "all pods running". Every Kubernetes burst's cluster serves the
//     shared CRDs (test/helpers/crd-dir.ts) and gives PyTorchJob workers a restricted-compliant init
//     container (bench/kube/cluster.ts). Each burst has its own fresh cluster and gateway.
// Knobs (environment): BENCH_JOBS=1000 BENCH_CONCURRENCY=32 BENCH_NODES=125 BENCH_TIMEOUT_S=150
//   BENCH_GANG_JOBS=100 (0: no gang burst)  BENCH_KIND_JOBS=40 (per kind; 0: no custom-kind bursts)
//   BENCH_KINDS=JOBSET,PYTORCH_JOB,RAY_JOB,RAY_CLUSTER (which kinds)
//   BENCH_CONTROLLER_PACE_MS=200
//   BENCH_BACKENDS=kubernetes,simulated  BENCH_RESULTS=bench/RESULTS.md (the section between the
//   `<!-- bench:kube -->` markers is replaced, or appended; empty string: do not write)
import os from 'node:os';
import path from 'node:path';
import { gitDescribe, loadAvg } from './api/process-stats.js';
import { ROOT } from './api/repo-root.js';
import { type BackendKind, type BurstResult, runBurst } from './kube/burst.js';
import {
  burstGpus,
  CUSTOM_KINDS,
  type CustomKind,
  isCustom,
  type Shape,
  shapeLabel,
} from './kube/workloads.js';
import { writeResultsSection } from './results-section.js';

const START = '<!-- bench:kube -->';
const END = '<!-- /bench:kube -->';

function quantiles(xs: number[]): { p50: number; p95: number; p99: number; max: number; n: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: s[s.length - 1] ?? NaN, n: s.length };
}
const ms = (x: number) => (Number.isNaN(x) ? '–' : Math.abs(x) < 10 ? x.toFixed(1) : x.toFixed(0));
const dist = (xs: number[]) => {
  const q = quantiles(xs);
  return q.n ? `${ms(q.p50)} / ${ms(q.p95)} / ${ms(q.p99)} / ${ms(q.max)}` : '–';
};

function table(results: BurstResult[]): string[] {
  const cols = results;
  const head = cols.map((r) =>
    r.backend === 'simulated' ? 'simulated cluster (baseline)' : shapeLabel(r.shape),
  );
  const line = (what: string, f: (r: BurstResult) => string) => `| ${what} | ${cols.map(f).join(' | ')} |`;
  const perJob = (x: number, r: BurstResult) => (r.jobs ? x / r.jobs : NaN);
  return [
    `| measure | ${head.join(' | ')} |`,
    `| --- | ${cols.map(() => '---:').join(' | ')} |`,
    line('jobs submitted / reached the backend', (r) => `${r.jobs} / ${r.toBackendMs.length}`),
    line('burst wall time: first submit → the last workload object created (simulated: started), s', (r) =>
      (r.wallMs / 1000).toFixed(1),
    ),
    line('submits answered per second (concurrency as set)', (r) =>
      (r.jobs / (r.submitMs / 1000)).toFixed(1),
    ),
    line(
      '**admission → first object created** (Job; gang: headless Service; custom kind: its object; simulated: → start), ms p50 / p95 / p99 / max',
      (r) => dist(r.toBackendMs),
    ),
    line(
      '**admission → STARTED event** (Kubernetes: all pods Running, seen by the informer), ms p50 / p95 / p99 / max',
      (r) => dist(r.toStartedMs),
    ),
    line('submit answered → admission (jobs.admission.at), ms', (r) => dist(r.submitToAdmissionMs)),
    line('submit answered → first object created (simulated: started), ms', (r) => dist(r.submitToBackendMs)),
    line('gateway CPU time per job, ms', (r) => ms(perJob(r.gatewayCpuS * 1000, r))),
    line(
      'gateway JS thread on CPU / waiting for a CPU, % of burst wall time',
      (r) =>
        `${((100 * r.gatewaySched.runNs) / 1e6 / r.wallMs).toFixed(0)}% / ${((100 * r.gatewaySched.waitNs) / 1e6 / r.wallMs).toFixed(0)}%`,
    ),
    line('bench process CPU per job, ms (load client; Kubernetes: + API server and its controllers)', (r) =>
      ms(perJob(r.benchCpuS * 1000, r)),
    ),
    line('**API writes per job** (Fairway’s): all / to the workload’s own kind (Job, JobSet…)', (r) =>
      r.kube ? `${(r.kube.writes / r.jobs).toFixed(2)} / ${(r.kube.objectWrites / r.jobs).toFixed(2)}` : '–',
    ),
    line(
      'objects per job in the tenant namespace at the end (Fairway’s and the controllers’; Events aside)',
      (r) => (r.kube ? (r.kube.objectsAtEnd / r.jobs).toFixed(2) : '–'),
    ),
    line('API requests per job (reads and writes; watches are one request each)', (r) =>
      r.kube ? (r.kube.requests / r.jobs).toFixed(2) : '–',
    ),
    line('validation failures / refused writes / controller problems', (r) =>
      r.kube ? `${r.kube.invalid} / ${r.kube.refused} / ${r.kube.controllerProblems}` : '–',
    ),
  ];
}

async function main(): Promise<void> {
  const jobs = Number(process.env.BENCH_JOBS ?? 1000);
  const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);
  const nodes = Number(process.env.BENCH_NODES ?? Math.ceil(jobs / 8));
  const timeoutMs = Number(process.env.BENCH_TIMEOUT_S ?? 150) * 1000;
  const controllerPaceMs = Number(process.env.BENCH_CONTROLLER_PACE_MS ?? 200);
  const backends = (process.env.BENCH_BACKENDS ?? 'kubernetes,simulated')
    .split(',')
    .map((b) => b.trim()) as BackendKind[];
  // Multi-node jobs beside the one-GPU burst, in the same run: 2, 3, 4 pods of 8 GPUs in turn, as BATCH gangs
  // and as each custom workload kind.
  const gangJobs = Number(process.env.BENCH_GANG_JOBS ?? 100);
  const kindJobs = Number(process.env.BENCH_KIND_JOBS ?? 40);
  const kinds = (process.env.BENCH_KINDS ?? CUSTOM_KINDS.join(','))
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean) as CustomKind[];
  for (const kind of kinds)
    if (!CUSTOM_KINDS.includes(kind))
      throw new Error(`BENCH_KINDS: ${kind} is none of ${CUSTOM_KINDS.join(', ')}`);
  const resultsFile = process.env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS.md');
  const started = Date.now();
  const loadStart = loadAvg();
  const results: BurstResult[] = [];
  const runs: { backend: BackendKind; shape: Shape; jobs: number; nodes: number }[] = [];
  const multiNode = (shape: Shape, n: number) => ({
    backend: 'kubernetes' as const,
    shape,
    jobs: n,
    nodes: burstGpus(shape, n) / 8,
  });
  for (const backend of backends) {
    runs.push({ backend, shape: 'single', jobs, nodes });
    if (backend !== 'kubernetes') continue;
    if (gangJobs > 0) runs.push(multiNode('gangs', gangJobs));
    if (kindJobs > 0) for (const kind of kinds) runs.push(multiNode(kind, kindJobs));
  }
  for (const run of runs) {
    const what = `${run.backend} (${run.shape})`;
    console.error(
      `[bench:kube] ${what}: ${run.jobs} jobs, concurrency ${concurrency}, ${run.nodes} × 8 H100 …`,
    );
    const r = await runBurst({ ...run, concurrency, gpusPerNode: 8, timeoutMs, controllerPaceMs });
    console.error(
      `[bench:kube] ${what}: ${(r.wallMs / 1000).toFixed(1)} s, ${r.toBackendMs.length}/${r.jobs} reached the backend, admission → first object p50 ${ms(quantiles(r.toBackendMs).p50)} ms, → STARTED p50 ${ms(quantiles(r.toStartedMs).p50)} ms${r.kube ? `, invalid ${r.kube.invalid}, refused ${r.kube.refused}, controller problems ${r.kube.controllerProblems}` : ''}${r.errors.length ? `; errors: ${r.errors.join(' | ')}` : ''}`,
    );
    results.push(r);
  }
  const knobs = Object.entries(process.env)
    .filter(([key]) => key.startsWith('BENCH_') && key !== 'BENCH_RESULTS')
    .map(([key, v]) => `${key}=${v}`);
  const cpu = os.cpus();
  const kubeRuns = results.filter((r) => r.kube);
  const gangs = results.find((r) => r.shape === 'gangs');
  const custom = results.filter((r) => isCustom(r.shape));
  const what = [
    `a burst of ${jobs.toLocaleString('en')} one-GPU jobs`,
    ...(gangs ? [`one of ${gangs.jobs} 2–4-node gangs`] : []),
    ...(custom.length
      ? [`one of ${custom[0]!.jobs} per workload kind (${custom.map((r) => r.shape).join(', ')})`]
      : []),
  ];
  const listed = (rec: Record<string, number>) =>
    Object.entries(rec)
      .map(([key, n]) => `${key} → ${n}`)
      .join(', ');
  const lines = [
    START,
    `## Kubernetes backend — ${what.length > 1 ? `${what.slice(0, -1).join(', ')} and ${what[what.length - 1]}` : what[0]} against the test API server`,
    '',
    `Command: \`${knobs.length ? `${knobs.join(' ')} ` : ''}npm run bench:kube\` (bench/kube.ts)  `,
    `Date: ${new Date(started).toISOString()}; ${cpu.length} × ${cpu[0]?.model ?? '?'}, Node ${process.version}; load average at start / end: ${loadStart} / ${loadAvg()}; code ${gitDescribe()}.`,
    '',
    'The gateway is `node --import tsx src/main.ts` (NODE_ENV=production, SQLite, demo seeded), a fresh one (and a fresh cluster) per burst; ' +
      `${concurrency} submits in flight through the graph; each cluster has as many 8-H100 nodes as its burst asks GPUs (${nodes} for the one-GPU burst: ${runs.map((r) => r.nodes).join(' / ')} in column order) ` +
      'and aurora-training’s nominal H100 quota is set to the burst’s GPUs (setQuota). ' +
      (gangs || custom.length
        ? 'Multi-node jobs take 2, 3, 4 pods of 8 GPUs in turn, one node each (a PyTorchJob: a master and 1–3 workers; a RayJob / RayCluster: that many GPU workers and a head pod without GPU). '
        : '') +
      'The cluster is the test API server of test/helpers/kube-api-server (a test tool: it validates every write with kubernetes-models, ' +
      'custom objects against the CRDs it serves (the shared JobSet, PyTorchJob, RayJob, RayCluster… CRDs), and runs a Job controller, ' +
      'JobSet / PyTorchJob / RayJob / RayCluster controllers, a scheduler and a kubelet; pods start 20 ms after binding and run until deleted, a RayJob’s Ray job too; ' +
      'PyTorchJob workers get a restricted-compliant init container, as its operator’s template file would give), in the bench process with the load client. ' +
      (controllerPaceMs > 0
        ? `Its control loop is paced by the bench to one run per ${controllerPaceMs} ms and reads stored objects without copying them (as written it re-lists and deep-copies everything after every change and cannot keep up with 1,000 Jobs; see bench/kube/cluster.ts). `
        : 'Its control loop runs as written (BENCH_CONTROLLER_PACE_MS=0). ') +
      'Admission time is `jobs.admission.at`; object creation is the API server’s write log, which holds Fairway’s writes only (the controllers write to its store directly); ' +
      'a job is STARTED when Fairway sees all its pods Running.',
    '',
    ...table(results),
    '',
    ...kubeRuns.map((r) => {
      const k = r.kube!;
      return (
        `${shapeLabel(r.shape)}: writes during the burst (kind verb status → count): ${listed(k.writesByKindVerb)}; ` +
        `objects in the tenant namespace at the end: ${listed(k.objectsByKind)}; aurora's ResourceQuota requests.nvidia.com/gpu: ${k.resourceQuotaGpus}.` +
        (k.problemSamples.length ? ` Problems, first ones: ${k.problemSamples.join(' | ')}` : '')
      );
    }),
    ...(kubeRuns.length
      ? [
          '',
          `Tenant objects were written before each burst (${[...new Set(kubeRuns.map((r) => r.kube!.setupWrites))].join(' / ')} writes at startup: namespaces, quotas, limit ranges, network policies, service accounts, priority class).`,
        ]
      : []),
    ...results.flatMap((r) =>
      r.errors.length ? ['', `Errors (${r.backend}, ${r.shape}): ${r.errors.join(' | ')}`] : [],
    ),
    END,
  ];
  const section = lines.join('\n');
  console.log(section);
  if (resultsFile) {
    writeResultsSection(resultsFile, START, END, section);
    console.error(
      `[bench:kube] wrote ${path.relative(ROOT, resultsFile)} (${((Date.now() - started) / 1000).toFixed(0)} s in all)`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
