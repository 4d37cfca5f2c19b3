// The Kubernetes backend with two replicas on PostgreSQL and Redis: the leader stops in the
// middle of running jobs, the other replica takes over, adopts the Jobs the first one made and
// reports them to the end; nothing is created twice, and new submits run under the new leader.
import { afterEach, expect, it } from 'vitest';
import type { FairwayApp } from '../../src/server/app.js';
import { describeNeeding, serviceUrl } from '../helpers/database.js';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../helpers/kube-app.js';
import { postGraphql } from '../helpers/scheduler-app.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const STATE = `query($id: ID!) { node(id: $id) { ... on Job { state events(first: 20) { edges { node { type } } } } } }`;
const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';

let t: KubeTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

describeNeeding(['postgresql', 'redis'], 'Kubernetes backend, two replicas', () => {
  it('a follower takes over from a stopped leader, adopts its Jobs and runs each job exactly once', async () => {
    t = await startKubeApp({
      dialect: 'postgresql',
      redisUrl: serviceUrl('redis'),
      nodes: [1, 2].map((i) => gpuNode(`gpu-h100-${i}`)),
    });
    const replica: FairwayApp = await t.addReplica();
    const { url: replicaUrl } = await replica.listen(0, '127.0.0.1');
    expect(t.app.scheduler.isLeader).toBe(true);
    expect(replica.scheduler.isLeader).toBe(false);
    const member = t.token('aurora-research', 'MEMBER');
    const admin = t.token('aurora-research', 'TENANT_ADMIN');
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await t.gql(member, SUBMIT, {
        in: {
          name: `run-${i}`,
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          container: { image: IMAGE, env: [{ name: 'FAIRWAY_TEST_RUN_MS', value: '2500' }] },
        },
      });
      expect(res.errors).toBeUndefined();
      ids.push(res.data.submitJob.id);
    }
    await eventually(() => t!.kube.objects('Job').length === 6, 'six Jobs created by the first leader');

    // The leader goes away while the pods run; the follower campaigns and leads.
    await t.stopApp();
    await eventually(() => replica.scheduler.isLeader, 'the replica leading', 15_000);
    const state = (id: string) =>
      postGraphql<{ data?: { node: { state: string; events: { edges: { node: { type: string } }[] } } } }>(
        replicaUrl,
        admin,
        STATE,
        { id },
      );
    for (const id of ids)
      await eventually(
        async () => (await state(id)).data?.node.state === 'SUCCEEDED',
        `job ${id} SUCCEEDED under the new leader`,
        20_000,
      );
    for (const id of ids) {
      const types = (await state(id)).data!.node.events.edges.map((e) => e.node.type);
      expect(types.filter((x) => x === 'SUCCEEDED')).toHaveLength(1);
      expect(types).not.toContain('FAILED');
    }
    // A submit under the new leader runs too.
    const late = await postGraphql<{ data?: { submitJob: { id: string } } }>(replicaUrl, member, SUBMIT, {
      in: { name: 'late', podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }], container: { image: IMAGE } },
    });
    await eventually(
      async () => (await state(late.data!.submitJob.id)).data?.node.state === 'SUCCEEDED',
      'a job submitted after the takeover',
      20_000,
    );

    const creates = t.kube.writes
      .filter((w) => w.kind === 'Job' && w.verb === 'create' && w.status < 300)
      .map((w) => w.name);
    expect(creates).toHaveLength(7);
    expect(new Set(creates).size).toBe(7);
    expect(t.kube.invalid).toEqual([]);
  });
});
