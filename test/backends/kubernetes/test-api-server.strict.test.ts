/**
 * The test Kubernetes API server is as strict as a real one (1/2): more kinds and Events,
 * defaulting, admission (Priority, LimitRanger, PodSecurity), name rules, graceful termination.
 * The control plane's side (disruptions, the Job controller, DNS, watches, scheduling, apply) is in
 * test-api-server.cluster.test.ts.
 */

import {
  type BatchV1Api,
  CoordinationV1Api,
  type CoreV1Api,
  EventsV1Api,
  type KubeConfig,
  type KubernetesObjectApi,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  apiError,
  job,
  NS,
  pod,
  podSpec,
  startTestCluster,
  waitFor,
} from '../../helpers/kube-api-server/fixtures.js';
import type { KubeApiServer, KubeApiServerOptions } from '../../helpers/kube-api-server/index.js';

const RESTRICTED = 'fairway-locked';

let server: KubeApiServer;
let api: KubernetesObjectApi;
let batch: BatchV1Api;
let core: CoreV1Api;
let kc: KubeConfig;

const podsOf = (jobName: string): any[] =>
  server.objects('Pod', NS).filter((p) => p.metadata.labels?.['job-name'] === jobName);
const eventsAbout = (name: string) => server.objects('Event').filter((e) => e.involvedObject.name === name);

async function start(options: KubeApiServerOptions = {}): Promise<void> {
  ({ server, kc, api, batch, core } = await startTestCluster(options));
}

/** Another server with other options, for one test. */
async function restart(options: KubeApiServerOptions): Promise<void> {
  await server.close();
  await start(options);
}

beforeEach(() => start());

afterEach(async () => {
  expect(server.invalid).toEqual([]);
  expect(server.controllerProblems).toEqual([]);
  await server.close();
});

describe('kinds and discovery', () => {
  it('serves Services, Leases and Events (core and events.k8s.io), and lists them in discovery', async () => {
    const discovery = async (path: string) =>
      (await (
        await fetch(`${server.url}${path}`, { headers: { Authorization: 'Bearer test-token' } })
      ).json()) as any;
    const core1 = (await discovery('/api/v1')).resources.map((r: any) => r.name);
    expect(core1).toEqual(expect.arrayContaining(['services', 'services/status', 'events', 'pods/eviction']));
    expect((await discovery('/apis/coordination.k8s.io/v1')).resources[0]).toMatchObject({
      name: 'leases',
      kind: 'Lease',
    });
    expect((await discovery('/apis')).groups.map((g: any) => g.name)).toEqual(
      expect.arrayContaining(['coordination.k8s.io', 'events.k8s.io']),
    );
    const svc = await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    });
    expect(svc.spec).toMatchObject({
      type: 'ClusterIP',
      sessionAffinity: 'None',
      clusterIP: expect.stringMatching(/^10\.96\./),
    });
    expect(svc.spec?.ports?.[0]).toMatchObject({ protocol: 'TCP', targetPort: 80 });
    const headless = await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'workers' }, spec: { clusterIP: 'None', selector: { app: 'w' } } },
    });
    expect(headless.spec?.clusterIP).toBe('None');
    const lease = await kc.makeApiClient(CoordinationV1Api).createNamespacedLease({
      namespace: NS,
      body: {
        metadata: { name: 'fairway-leader' },
        spec: { holderIdentity: 'replica-1', leaseDurationSeconds: 15 },
      },
    });
    expect(lease.spec?.holderIdentity).toBe('replica-1');

    // The scheduler records why a pod waits, as a real one does; events.k8s.io/v1 serves the same Event.
    await batch.createNamespacedJob({ namespace: NS, body: job('big', { gpu: 6 }) });
    const failed = await waitFor('FailedScheduling', () =>
      server.objects('Event', NS).find((e) => e.reason === 'FailedScheduling'),
    );
    expect(failed).toMatchObject({
      type: 'Warning',
      message: '0/1 nodes are available: 1 Insufficient nvidia.com/gpu.',
      involvedObject: { kind: 'Pod', namespace: NS },
      source: { component: 'default-scheduler' },
      count: 1,
    });
    expect(failed.firstTimestamp).toBeTruthy();
    expect(failed.lastTimestamp).toBeTruthy();
    const v1 = await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: NS });
    const same = v1.items.find((e) => e.metadata?.name === failed.metadata.name);
    expect(same).toMatchObject({ reason: 'FailedScheduling', note: failed.message, type: 'Warning' });
    expect(same?.regarding?.name).toBe(failed.involvedObject.name);
    expect(eventsAbout('big').map((e) => e.reason)).toContain('SuccessfulCreate');
  });
});

describe('defaulting', () => {
  it('defaults a Job (selector, template labels, backoffLimit, completionMode…) and its pods', async () => {
    const bare = job('d1');
    delete bare.spec!.parallelism;
    delete bare.spec!.completions;
    const created = await batch.createNamespacedJob({ namespace: NS, body: bare });
    const uid = created.metadata!.uid!;
    expect(created.spec).toMatchObject({
      selector: { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } },
      backoffLimit: 6,
      completionMode: 'NonIndexed',
      parallelism: 1,
      completions: 1,
      suspend: false,
      podReplacementPolicy: 'TerminatingOrFailed',
    });
    expect(created.spec!.template.metadata!.labels).toEqual({
      app: 'd1',
      'controller-uid': uid,
      'batch.kubernetes.io/controller-uid': uid,
      'job-name': 'd1',
      'batch.kubernetes.io/job-name': 'd1',
    });
    expect(created.metadata!.labels).toEqual({ app: 'd1' }); // a Job without labels takes its template's
    const [p] = await waitFor('pod', () => podsOf('d1').length === 1 && podsOf('d1'));
    expect(p.metadata.generateName).toBe('d1-');
    expect(p.spec).toMatchObject({
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      priority: 0,
      preemptionPolicy: 'PreemptLowerPriority',
    });
    expect(p.spec.containers[0].resources.requests).toEqual({ cpu: '1', memory: '1Gi' }); // from the limits
    expect(p.status.qosClass).toBe('Guaranteed');
    const plain = await core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: 'plain' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    });
    expect(plain.spec).toMatchObject({ restartPolicy: 'Always', terminationGracePeriodSeconds: 30 });
    expect(plain.spec?.containers[0]).toMatchObject({
      imagePullPolicy: 'Always',
      terminationMessagePath: '/dev/termination-log',
    });
    expect(plain.status).toMatchObject({ phase: 'Pending', qosClass: 'BestEffort' });
  });

  it('refuses a Job whose pods would restart Always, or whose selector it did not generate', async () => {
    const always = job('d2');
    delete always.spec!.template.spec!.restartPolicy;
    const refused = await apiError(batch.createNamespacedJob({ namespace: NS, body: always }));
    expect(refused.body.message).toBe(
      'Job.batch "d2" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
    );
    expect(refused.body.details.causes[0]).toMatchObject({
      reason: 'FieldValueNotSupported',
      field: 'spec.template.spec.restartPolicy',
    });
    const own = job('d3', { extra: { selector: { matchLabels: { app: 'd3' } } } });
    expect((await apiError(batch.createNamespacedJob({ namespace: NS, body: own }))).body.message).toContain(
      '`selector` not auto-generated',
    );
    const manual = job('d4', { extra: { selector: { matchLabels: { app: 'd4' } }, manualSelector: true } });
    const made = await batch.createNamespacedJob({ namespace: NS, body: manual });
    expect(made.spec?.selector).toEqual({ matchLabels: { app: 'd4' } });
    expect(made.spec?.template.metadata?.labels).toEqual({ app: 'd4' });
    server.invalid.splice(0);
  });

  it('sets priority from the PriorityClass (refusing an unknown one), and LimitRange defaults', async () => {
    const refused = await apiError(
      core.createNamespacedPod({
        namespace: NS,
        body: { ...pod('p1'), spec: { ...podSpec(), priorityClassName: 'nope' } },
      }),
    );
    expect(refused.code).toBe(403);
    expect(refused.body).toMatchObject({
      reason: 'Forbidden',
      message: 'pods "p1" is forbidden: no PriorityClass with name nope was found',
    });
    server.put({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'normal' },
      value: 500,
      globalDefault: true,
    });
    server.put({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'low' },
      value: -10,
      preemptionPolicy: 'Never',
    });
    const defaulted = await core.createNamespacedPod({ namespace: NS, body: pod('p2') as any });
    expect(defaulted.spec).toMatchObject({ priorityClassName: 'normal', priority: 500 });
    const low = await core.createNamespacedPod({
      namespace: NS,
      body: { ...pod('p3'), spec: { ...podSpec(), priorityClassName: 'low' } } as any,
    });
    expect(low.spec).toMatchObject({ priority: -10, preemptionPolicy: 'Never' });
    server.put({
      apiVersion: 'v1',
      kind: 'LimitRange',
      metadata: { name: 'defaults', namespace: NS },
      spec: {
        limits: [
          {
            type: 'Container',
            default: { cpu: '2', memory: '2Gi' },
            defaultRequest: { cpu: '500m', memory: '1Gi' },
          },
        ],
      },
    });
    const spec = podSpec();
    spec.containers[0].resources = { limits: { memory: '4Gi' } };
    const ranged = await core.createNamespacedPod({ namespace: NS, body: { ...pod('p4'), spec } as any });
    expect(ranged.spec!.containers[0]!.resources).toEqual({
      limits: { memory: '4Gi', cpu: '2' },
      requests: { memory: '4Gi', cpu: '500m' },
    });
    expect(ranged.metadata?.annotations?.['kubernetes.io/limit-ranger']).toBe(
      'LimitRanger plugin set: cpu request for container main; cpu limit for container main',
    );
  });
});

describe('admission and names', () => {
  it('enforces Pod Security restricted in a labelled namespace, for clients and for the Job controller', async () => {
    server.put({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: RESTRICTED, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    const bare = { metadata: { name: 'root' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } };
    const refused = await apiError(core.createNamespacedPod({ namespace: RESTRICTED, body: bare }));
    expect(refused.code).toBe(403);
    expect(refused.body.message).toBe(
      'pods "root" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
    const host = podSpec();
    host.hostNetwork = true;
    host.volumes = [{ name: 'sock', hostPath: { path: '/var/run/docker.sock' } }];
    host.containers[0].securityContext.privileged = true;
    const hostRefused = await apiError(
      core.createNamespacedPod({ namespace: RESTRICTED, body: { metadata: { name: 'host' }, spec: host } }),
    );
    expect(hostRefused.body.message).toContain(
      'host namespaces (hostNetwork=true), privileged (container "main" must not set securityContext.privileged=true), restricted volume types (volume "sock" uses restricted volume type "hostPath")',
    );
    await core.createNamespacedPod({
      namespace: RESTRICTED,
      body: { metadata: { name: 'fine' }, spec: podSpec() },
    });
    const loose = job('loose');
    loose.metadata!.namespace = RESTRICTED;
    delete loose.spec!.template.spec!.securityContext;
    await batch.createNamespacedJob({ namespace: RESTRICTED, body: loose });
    const problem = await waitFor('the refusal', () => server.controllerProblems[0]);
    expect(problem).toMatch(
      /^pods "loose-" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true/,
    );
    const failedCreate = await waitFor('FailedCreate', () =>
      eventsAbout('loose').find((e) => e.reason === 'FailedCreate'),
    );
    expect(failedCreate).toMatchObject({
      type: 'Warning',
      message: `Error creating: ${problem}`,
      source: { component: 'job-controller' },
    });
    expect(server.objects('Pod', RESTRICTED).map((p) => p.metadata.name)).toEqual(['fine']);
    server.controllerProblems.splice(0);
  });

  it('checks names as a real server: DNS subdomains, Namespace and Service labels, Job names of ≤ 63', async () => {
    const message = async (obj: any) => (await apiError(api.create(obj))).body.message as string;
    expect(await message(job('Bad_Name'))).toBe(
      `Job.batch "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
    );
    expect(await message({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'a.b' } })).toContain(
      'a lowercase RFC 1123 label must consist of',
    );
    expect(
      await message({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: '1web', namespace: NS },
        spec: { ports: [{ port: 80 }] },
      }),
    ).toContain('a DNS-1035 label must consist of lower case alphanumeric characters or');
    const long = 'j'.repeat(64);
    expect(await message(job(long))).toContain(
      `spec.template.labels: Invalid value: "${long}": must be no more than 63 characters`,
    );
    const indexed = 'i'.repeat(62);
    expect(await message(job(indexed, { pods: 10 }))).toContain(
      `metadata.name: Invalid value: "${indexed}": will not able to create pod with invalid DNS label: ${indexed}-9`,
    );
    await api.create(job('j'.repeat(63))); // 63 is fine for a NonIndexed Job
    await api.create(job('i'.repeat(61), { pods: 10 })); // `<61>-9` is 63
    server.invalid.splice(0);
  });
});

describe('graceful termination', () => {
  it('keeps a deleted pod (and its GPUs) until its process exits on SIGTERM, then it is Failed (143) and gone', async () => {
    const phases: string[] = [];
    await core.createNamespacedPod({
      namespace: NS,
      body: pod('slow', { 'fairway.dev/test-sigterm-ms': '300' }, podSpec({ gpu: 4 })) as any,
    });
    await waitFor('running', () => server.get('Pod', NS, 'slow')?.status.phase === 'Running');
    await core.deleteNamespacedPod({ name: 'slow', namespace: NS });
    const terminating = server.get('Pod', NS, 'slow');
    expect(terminating.metadata.deletionGracePeriodSeconds).toBe(30);
    expect(Date.parse(terminating.metadata.deletionTimestamp)).toBeGreaterThan(Date.now() + 28_000);
    await core.createNamespacedPod({ namespace: NS, body: pod('next', {}, podSpec({ gpu: 4 })) as any });
    await new Promise((r) => setTimeout(r, 100));
    expect(server.get('Pod', NS, 'slow')).toBeDefined();
    expect(server.get('Pod', NS, 'next').spec.nodeName).toBeUndefined(); // the terminating pod's GPUs are still used
    const lines = (await fetch(
      `${server.url}/api/v1/namespaces/${NS}/pods?watch=true&timeoutSeconds=1&resourceVersion=${terminating.metadata.resourceVersion}&fieldSelector=metadata.name%3Dslow`,
      { headers: { Authorization: 'Bearer test-token' } },
    ).then((r) => r.text())) as string;
    for (const line of lines.trim().split('\n')) phases.push(JSON.parse(line).type);
    expect(server.get('Pod', NS, 'slow')).toBeUndefined();
    expect(phases).toEqual(['MODIFIED', 'DELETED']);
    const last = JSON.parse(lines.trim().split('\n').at(-1)!).object;
    expect(last.status.phase).toBe('Failed');
    expect(last.status.containerStatuses[0].state.terminated).toMatchObject({
      exitCode: 143,
      reason: 'Error',
    });
    await waitFor('next scheduled', () => server.get('Pod', NS, 'next')?.spec.nodeName === 'gpu-1');
    expect(eventsAbout('slow').map((e) => e.reason)).toContain('Killing');
  });

  it('kills (137) a pod that outlives its grace period, lets one exit 0 on SIGTERM, and removes at once with gracePeriodSeconds=0', async () => {
    const spec = { ...podSpec(), terminationGracePeriodSeconds: 1 };
    await core.createNamespacedPod({
      namespace: NS,
      body: pod('stubborn', { 'fairway.dev/test-sigterm-ms': '60000' }, spec) as any,
    });
    await core.createNamespacedPod({
      namespace: NS,
      body: pod('clean', { 'fairway.dev/test-outcome': 'success' }, podSpec()) as any,
    });
    await core.createNamespacedPod({ namespace: NS, body: pod('now', {}, podSpec()) as any });
    await waitFor('running', () => server.objects('Pod', NS).every((p) => p.status.phase === 'Running'));
    const ends = new Map<string, any>();
    const watch = fetch(
      `${server.url}/api/v1/namespaces/${NS}/pods?watch=true&timeoutSeconds=2&resourceVersion=${server.get('Pod', NS, 'now').metadata.resourceVersion}`,
      {
        headers: { Authorization: 'Bearer test-token' },
      },
    ).then((r) => r.text());
    await core.deleteNamespacedPod({ name: 'now', namespace: NS, gracePeriodSeconds: 0 });
    expect(server.get('Pod', NS, 'now')).toBeUndefined();
    await core.deleteNamespacedPod({ name: 'clean', namespace: NS });
    await core.deleteNamespacedPod({ name: 'stubborn', namespace: NS });
    await waitFor('stubborn gone', () => !server.get('Pod', NS, 'stubborn'), 3000);
    for (const line of (await watch).trim().split('\n')) {
      const e = JSON.parse(line);
      if (e.type === 'DELETED') ends.set(e.object.metadata.name, e.object.status);
    }
    expect(ends.get('stubborn')).toMatchObject({ phase: 'Failed' });
    expect(ends.get('stubborn').containerStatuses[0].state.terminated.exitCode).toBe(137);
    expect(ends.get('clean')).toMatchObject({ phase: 'Succeeded' });
    expect(ends.get('clean').containerStatuses[0].state.terminated.exitCode).toBe(0);
    expect(ends.get('now').phase).toBe('Running'); // no time to stop: gone as it was
  });

  it('keeps a deleted Namespace Terminating until its pods have stopped, refusing new content meanwhile', async () => {
    await core.createNamespacedPod({
      namespace: NS,
      body: pod('stay', { 'fairway.dev/test-sigterm-ms': '200' }) as any,
    });
    await waitFor('running', () => server.get('Pod', NS, 'stay')?.status.phase === 'Running');
    await core.deleteNamespace({ name: NS });
    expect(server.get('Namespace', undefined, NS).status.phase).toBe('Terminating');
    const late = await apiError(core.createNamespacedPod({ namespace: NS, body: pod('late') as any }));
    expect(late.body).toMatchObject({
      code: 403,
      message: `pods "late" is forbidden: unable to create new content in namespace ${NS} because it is being terminated`,
    });
    await waitFor('the namespace gone', () => !server.get('Namespace', undefined, NS));
  });

  it('deletes at once with gracefulDeletion: false (kept for tests written before graceful termination)', async () => {
    await restart({ gracefulDeletion: false });
    await core.createNamespacedPod({
      namespace: NS,
      body: pod('quick', { 'fairway.dev/test-sigterm-ms': '5000' }) as any,
    });
    await waitFor('running', () => server.get('Pod', NS, 'quick')?.status.phase === 'Running');
    await core.deleteNamespacedPod({ name: 'quick', namespace: NS });
    expect(server.get('Pod', NS, 'quick')).toBeUndefined();
  });
});
