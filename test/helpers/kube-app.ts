import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportSPKI, generateKeyPair } from 'jose';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import type { FairwayConfig } from '../../src/config/index.js';
import { ClusterNode } from '../../src/persistence/cluster/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { type BuildAppOptions, buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './database.js';
import { demoToken, testConfig } from './harness.js';
import { type KubeApiServer, type KubeletOptions, startKubeApiServer } from './kube-api-server/index.js';
import { postGraphql } from './scheduler-app.js';

export const H100_PRODUCT = 'NVIDIA-H100-80GB-HBM3';

/** The backend settings the tests run with: the demo's two flavors fed by labelled nodes. */
export const TEST_KUBE_SETTINGS = {
  poolLabel: 'fairway.dev/pool',
  flavors: [
    { flavor: 'a100-1g.10gb', resource: 'nvidia.com/mig-1g.10gb', unitsPerGpu: 7 },
    { flavor: 'h100-80g', resource: 'nvidia.com/gpu', gpuProduct: H100_PRODUCT },
  ],
  notRunningAfterMs: 1500,
  // Faster than production (10 s, 5 min), so the fault tests see recovery within seconds.
  requestTimeoutMs: 3000,
  watchRestartMs: 3000,
};

/** A GPU node as the NVIDIA device plugin and GPU feature discovery would label it. */
export function gpuNode(
  name: string,
  options: {
    gpus?: number;
    mig?: number;
    pool?: string;
    unschedulable?: boolean;
    taints?: { key: string; value?: string; effect: string }[];
  } = {},
) {
  const allocatable: Record<string, string> = { cpu: '192', memory: '1Ti', pods: '110' };
  const labels: Record<string, string> = {
    'kubernetes.io/hostname': name,
    'fairway.dev/pool': options.pool ?? 'shared',
  };
  if (options.mig !== undefined) allocatable['nvidia.com/mig-1g.10gb'] = String(options.mig);
  else {
    allocatable['nvidia.com/gpu'] = String(options.gpus ?? 8);
    labels['nvidia.com/gpu.product'] = H100_PRODUCT;
  }
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels },
    spec: {
      ...(options.unschedulable ? { unschedulable: true } : {}),
      ...(options.taints ? { taints: options.taints } : {}),
    },
    status: { allocatable, capacity: allocatable, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

export interface KubeTestApp {
  app: FairwayApp;
  kube: KubeApiServer;
  url: string;
  errors: unknown[];
  token(tenant: string | null, role: DemoCredential['role']): string;
  gql<T = any>(
    bearer: string,
    query: string,
    variables?: Record<string, unknown>,
  ): Promise<{ data?: T; errors?: { message: string; extensions?: Record<string, unknown> }[] }>;
  /** Runs the backend sync now (inventory → nodes, tenants → namespaces) and waits for it. */
  sync(): Promise<void>;
  /** Stops the app only (the API server and database stay), as a crash or a restart would. */
  stopApp(): Promise<void>;
  /** Starts a new app on the same database and API server. */
  restartApp(): Promise<void>;
  /** Another replica on the same database, API server and Redis (PostgreSQL and `redisUrl` only); closed with the app. */
  addReplica(): Promise<FairwayApp>;
  close(): Promise<void>;
}

export interface KubeTestAppOptions {
  dialect?: Dialect;
  nodes?: ReturnType<typeof gpuNode>[];
  kubelet?: KubeletOptions;
  settings?: Record<string, unknown>;
  /** An API server the test made (to start it with other options); closed with the app. */
  kube?: KubeApiServer;
  /** Events across replicas (see addReplica). */
  redisUrl?: string;
  /** The server URL the gateway's kubeconfig names (a TCP proxy in front of the API server); default `kube.url`. */
  apiServerUrl?: string;
  /** Governance loop settings passed to buildApp (short periods for tests). */
  governance?: BuildAppOptions['governance'];
  /** The inference autoscaler's period (tests that run it themselves give a long one). */
  inference?: BuildAppOptions['inference'];
}

/**
 * A gateway configured with FAIRWAY_BACKEND=kubernetes against the test API server, on a fresh
 * seeded database: the demo's tenants get namespaces, the API server's nodes become the
 * scheduler's nodes (the demo's simulated nodes leave), and jobs run as Kubernetes Jobs.
 */
export async function startKubeApp(options: KubeTestAppOptions = {}): Promise<KubeTestApp> {
  const kube =
    options.kube ??
    (await startKubeApiServer({ kubelet: options.kubelet ?? { startDelayMs: 20, defaultRunMs: 300 } }));
  for (const node of options.nodes ?? [
    gpuNode('gpu-h100-1'),
    gpuNode('gpu-h100-2'),
    gpuNode('gpu-a100-mig-1', { mig: 56 }),
  ])
    kube.put(node);
  const db: TestDatabase = await createTestDatabase(options.dialect ?? 'sqlite');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-kube-'));
  const kubeconfigPath = path.join(dataDir, 'kubeconfig.yaml');
  if (options.apiServerUrl) {
    const kubeconfig = parseYaml(kube.kubeconfigYaml) as { clusters: { cluster: { server: string } }[] };
    for (const entry of kubeconfig.clusters) entry.cluster.server = options.apiServerUrl;
    fs.writeFileSync(kubeconfigPath, toYaml(kubeconfig));
  } else kube.writeKubeconfig(kubeconfigPath);
  const settingsFile = path.join(dataDir, 'kubernetes.yaml');
  fs.writeFileSync(settingsFile, toYaml({ ...TEST_KUBE_SETTINGS, ...options.settings }));
  const { publicKey } = await generateKeyPair('RS256');
  const base = testConfig({
    dataDir,
    database: db.database,
    oidc: { publicKeyPem: await exportSPKI(publicKey) },
  });
  const config: FairwayConfig = {
    ...base,
    backend: {
      ...base.backend,
      kind: 'kubernetes',
      kubernetes: { kubeconfigPath, settingsFile, startupTimeoutMs: 10_000 },
    },
    ...(options.redisUrl ? { server: { ...base.server, redisUrl: options.redisUrl } } : {}),
  };
  const replicas: FairwayApp[] = [];
  const errors: unknown[] = [];
  const build = () =>
    buildApp({
      config,
      logError: (e) => errors.push(e),
      reauthCacheMs: 0,
      scheduler: { debounceMs: 5, resyncIntervalMs: 1000 },
      ...(options.governance ? { governance: options.governance } : {}),
      ...(options.inference ? { inference: options.inference } : {}),
    });
  let app = await build();
  const credentials = (await seedDemo(app.orm, dataDir, Date.now))!;
  await app.scheduler.rebuild();
  await settled(app, kube);
  let { url } = await app.listen(0, '127.0.0.1');
  let stopped = false;
  const harness: KubeTestApp = {
    get app() {
      return app;
    },
    kube,
    get url() {
      return url;
    },
    errors,
    token(tenant, role) {
      return demoToken(credentials, tenant, role);
    },
    gql: (bearer, query, variables) => postGraphql(url, bearer, query, variables),
    sync: () => app.backendSync!.request(),
    async stopApp() {
      if (stopped) return;
      stopped = true;
      await app.close();
    },
    async restartApp() {
      await harness.stopApp();
      app = await build();
      stopped = false;
      await settled(app, kube);
      ({ url } = await app.listen(0, '127.0.0.1'));
    },
    async addReplica() {
      const replica = await build();
      replicas.push(replica);
      return replica;
    },
    async close() {
      await harness.stopApp();
      for (const replica of replicas) await replica.close();
      await kube.close();
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return harness;
}

/**
 * Syncs until the scheduler's nodes are the API server's (the demo's simulated ones gone) and
 * every tenant has its namespace: the inventory arrives asynchronously and may race the seed.
 */
async function settled(app: FairwayApp, kube: KubeApiServer): Promise<void> {
  await eventually(async () => {
    await app.backendSync!.request();
    const stored = (await app.orm.em.fork().find(ClusterNode, {})).map((n) => n.name).sort();
    const inCluster = kube
      .objects('Node')
      .map((n) => n.metadata.name as string)
      .sort();
    const tenants = await app.orm.em.fork().find(Tenant, { status: { $ne: 'ARCHIVED' } }, { filters: false });
    return (
      stored.join() === inCluster.join() &&
      tenants.every((t) => kube.get('Namespace', undefined, `fairway-${t.slug}`))
    );
  }, 'the backend sync to settle (nodes and namespaces)');
}

/** Polls until `check` returns a value (not undefined/false), or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  what: string,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
