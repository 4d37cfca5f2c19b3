// Job logs and cluster events through the graph with FAIRWAY_BACKEND=kubernetes, end to end: a
// running job's lines read live from the pod log API, its pods' Events as the cluster recorded them,
// and, once its pod is gone, the same lines from the archive the backend's 'pod-log' report filled.
import { afterEach, describe, expect, it } from 'vitest';
import { PodLogArchive } from '../../../src/persistence/logs/index.js';
import { eventually, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const STATE = `query($id: ID!) { node(id: $id) { ... on Job { state } } }`;
const LOGS = `query($id: ID!, $tail: Int) { node(id: $id) { ... on Job {
  logs(tail: $tail) { run archived lines { podSet pod text cursor } }
  clusterEvents { type reason object podSet pod message } } } }`;
const NS = 'fairway-aurora-research';

let t: KubeTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

describe('Kubernetes job logs through the graph', () => {
  it('reads a running job’s lines and events from the cluster, and from the archive once its pod is gone', async () => {
    t = await startKubeApp();
    const member = t.token('aurora-research', 'MEMBER');
    const res = await t.gql(member, SUBMIT, {
      in: {
        name: 'train',
        podSets: [{ name: 'workers', count: 1, gpusPerPod: 1 }],
        expectedDurationSeconds: 3600,
        container: {
          image: 'nvcr.io/nvidia/pytorch:24.05-py3',
          command: ['python', 'train.py'],
          env: [
            { name: 'FAIRWAY_TEST_LOG_LINES', value: '3' },
            { name: 'FAIRWAY_TEST_LOG_TEXT', value: 'epoch {n}' },
            { name: 'FAIRWAY_TEST_RUN_MS', value: '1500' },
          ],
        },
      },
    });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const id = res.data!.submitJob.id as string;
    const state = async () => (await t!.gql(member, STATE, { id })).data?.node?.state;
    await eventually(async () => (await state()) === 'RUNNING', 'RUNNING');
    const live = await eventually(async () => {
      const r = await t!.gql(member, LOGS, { id, tail: 100 });
      return r.data?.node?.logs?.lines?.length === 4 && r.data.node;
    }, 'the live lines');
    expect(live.logs).toMatchObject({ run: 1, archived: false });
    expect(live.logs.lines.map((l: { text: string }) => l.text)).toEqual([
      'starting python train.py',
      'epoch 1',
      'epoch 2',
      'epoch 3',
    ]);
    expect(live.logs.lines[0]).toMatchObject({ podSet: 'workers', pod: 0 });
    const started = live.clusterEvents.find((e: { reason: string }) => e.reason === 'Started');
    expect(started).toMatchObject({ type: 'NORMAL', object: 'Pod 0 of workers', podSet: 'workers', pod: 0 });
    expect(live.clusterEvents.map((e: { reason: string }) => e.reason)).toEqual(
      expect.arrayContaining(['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started']),
    );

    await eventually(async () => (await state()) === 'SUCCEEDED', 'SUCCEEDED');
    // The backend reported the pod's output as it ended ('pod-log'), and the archive kept it.
    await eventually(
      async () => (await t!.app.orm.em.fork().count(PodLogArchive, {}, { filters: false })) === 1,
      'the archived pod',
    );
    // The pod goes (its Job's TTL, a node drain): its log is read from the archive.
    const [pod] = t.kube.objects('Pod', NS);
    t.kube.remove('Pod', NS, pod.metadata.name);
    const archived = await eventually(async () => {
      const r = await t!.gql(member, LOGS, { id, tail: 100 });
      return r.data?.node?.logs?.archived === true && r.data.node.logs;
    }, 'the archived lines');
    expect(archived.lines.map((l: { text: string }) => l.text)).toEqual([
      'starting python train.py',
      'epoch 1',
      'epoch 2',
      'epoch 3',
      'done',
    ]);
    expect(archived.lines.slice(0, 4).map((l: { cursor: string }) => l.cursor)).toEqual(
      live.logs.lines.map((l: { cursor: string }) => l.cursor),
    );
    expect(t.errors).toEqual([]);
  });

  it('a 10 MB line is cut to 16 KiB with its count, bytes that are not UTF-8 replaced, a secret masked; another tenant reads nothing', async () => {
    t = await startKubeApp();
    const member = t.token('aurora-research', 'MEMBER');
    const secret = 'ghp_kubeSecretValue123';
    const res = await t.gql(member, SUBMIT, {
      in: {
        name: 'noisy',
        podSets: [{ name: 'workers', count: 1, gpusPerPod: 1 }],
        container: {
          image: 'nvcr.io/nvidia/pytorch:24.05-py3',
          command: ['python', 'train.py'],
          env: [
            { name: 'TOKEN', value: secret, secret: true },
            { name: 'FAIRWAY_TEST_RUN_MS', value: '600000' },
          ],
        },
      },
    });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const id = res.data!.submitJob.id as string;
    await eventually(
      async () => (await t!.gql(member, STATE, { id })).data?.node?.state === 'RUNNING',
      'RUNNING',
    );
    const [pod] = t.kube.objects('Pod', NS);
    t.kube.writeLog(
      NS,
      pod.metadata.name,
      Buffer.concat([
        Buffer.from(`token=${secret} bad bytes: `),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from('\n'),
        Buffer.from(`${'x'.repeat(10 * 1024 * 1024)}\n`),
      ]),
    );
    const lines = await eventually(async () => {
      const r = await t!.gql(member, LOGS, { id, tail: 10 });
      const got = r.data?.node?.logs?.lines as { text: string }[] | undefined;
      return got && got.length >= 3 && got;
    }, 'the written lines');
    const bad = lines.find((l) => l.text.startsWith('token='))!;
    expect(bad.text).toBe('token=[secret] bad bytes: \uFFFD\uFFFD\uFFFD');
    const long = lines.find((l) => l.text.startsWith('xxx'))!;
    expect(long.text).toMatch(/ …\[line cut: \d+ more bytes\]$/);
    expect(Buffer.byteLength(long.text)).toBeLessThan(17 * 1024);
    expect(JSON.stringify(lines)).not.toContain(secret);
    const other = await t.gql(t.token('borealis-inference', 'TENANT_ADMIN'), LOGS, { id, tail: 10 });
    expect(other.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect(other.data?.node ?? null).toBeNull();
    expect(t.errors).toEqual([]);
  });
});
