import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { describeEachDialect } from '../../helpers/database.js';
import { expectOk, expectRefusedUnchanged, startTestApp, type TestApp } from '../../helpers/harness.js';

// A container's security context and where its data may live: refused at submit and
// preview alike, before anything is written, whatever the tenant's boundaries allow.

let t: TestApp;
let aurora: Record<string, string>;
let platform: string;
let ada: string;
let max: string;
let serial = 0;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible } }`;
const SET_TENANT = `mutation($t: ID!, $b: DataBoundariesInput!) { setTenantDataBoundaries(tenantId: $t, boundaries: $b) { id } }`;
const CONTAINER = `query($id: ID!) { node(id: $id) { ... on Job { container { image env { name value } securityContext { runAsUser runAsGroup } } } } }`;
const ENFORCED =
  /Fairway runs every container as non-root, without privilege escalation, with all capabilities dropped and the RuntimeDefault seccomp profile/;

const allowed = {
  image: 'nvcr.io/nvidia/pytorch:24.01-py3',
  datasets: [{ location: 's3://aurora-datasets/imagenet', mountPath: '/data' }],
  artifactStore: 's3://aurora-models/run-1',
};
const submission = (container: Record<string, unknown>) => ({
  in: {
    queueId: aurora.Queue,
    name: `secure-${++serial}`,
    podSets: [{ gpusPerPod: 1 }],
    expectedDurationSeconds: 60,
    container: { ...allowed, ...container },
  },
});

/** Submit audit events that succeeded: a refused submit must add none. */
async function successfulSubmits(): Promise<number> {
  return t.app.orm.em
    .fork()
    .count(AuditEvent, { action: 'job.submit', outcome: 'SUCCESS' }, { filters: false });
}

/** Refused in submit and in preview with BAD_USER_INPUT, nothing written, nothing audited as a success;
 * returns the submit's error.
 */
async function expectRefusedBoth(container: Record<string, unknown>) {
  const before = await successfulSubmits();
  const res = await expectRefusedUnchanged(t, max, SUBMIT, submission(container), 'BAD_USER_INPUT');
  await expectRefusedUnchanged(t, max, PREVIEW, submission(container), 'BAD_USER_INPUT');
  expect(await successfulSubmits()).toBe(before);
  return res.body.errors![0]!;
}

describeEachDialect('submit: the container security context and node-local data', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    max = t.token('aurora-research', 'MEMBER');
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    [
      'privileged',
      { privileged: true },
      'container.securityContext.privileged',
      /privileged container is not allowed/,
    ],
    [
      'privilege escalation',
      { allowPrivilegeEscalation: true },
      'container.securityContext.allowPrivilegeEscalation',
      /Privilege escalation is not allowed/,
    ],
    [
      'added capabilities',
      { addCapabilities: ['NET_ADMIN'] },
      'container.securityContext.addCapabilities',
      /Capabilities cannot be added \(asked for: NET_ADMIN\)/,
    ],
    [
      'runAsNonRoot false',
      { runAsNonRoot: false },
      'container.securityContext.runAsNonRoot',
      /runAsNonRoot cannot be false/,
    ],
    ['runAsUser 0 (root)', { runAsUser: 0 }, 'container.securityContext.runAsUser', /runAsUser 0 is root/],
    [
      'a negative user',
      { runAsUser: -1 },
      'container.securityContext.runAsUser',
      /runAsUser must be an integer from 0 to 2147483647/,
    ],
    [
      'a negative group',
      { runAsUser: 1000, runAsGroup: -5 },
      'container.securityContext.runAsGroup',
      /runAsGroup must be an integer/,
    ],
    [
      'root with the safe flags around it',
      { runAsUser: 0, runAsNonRoot: true, privileged: false },
      'container.securityContext.runAsUser',
      /root/,
    ],
  ])('%s is refused with what Fairway enforces instead', async (_what, securityContext, field, message) => {
    const error = await expectRefusedBoth({ securityContext });
    expect(error.extensions?.field).toBe(field);
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(ENFORCED);
  });

  it('a user or group id beyond 32 bits is refused', async () => {
    await expectRefusedBoth({ securityContext: { runAsUser: 2_147_483_648 } });
    await expectRefusedBoth({ securityContext: { runAsGroup: 2_147_483_648 } });
  });

  it.each([
    ['file://', 'file://localhost/etc'],
    ['file:/// (no host)', 'file:///etc/passwd'],
    ['FILE:// in capitals', 'FILE://node/var/lib/kubelet'],
    ['hostpath://', 'hostpath://node/var/lib/kubelet'],
    ['host://', 'host://node/var/run'],
    ['a bare absolute path', '/var/run/docker.sock'],
  ])(
    'a dataset at %s (the node itself) is refused, even with unrestricted boundaries',
    async (_what, location) => {
      await expectOk(t, platform, SET_TENANT, { t: aurora.Tenant, b: {} });
      try {
        const error = await expectRefusedBoth({
          datasets: [{ location, mountPath: '/data' }],
          artifactStore: null,
        });
        expect(error.extensions?.field).toBe('container.datasets');
        expect(error.message).toMatch(/^Dataset location: .*(reaches the node itself|is a path on the node)/);
        expect(error.message).toMatch(/Fairway never mounts the node's own filesystem/);
      } finally {
        await expectOk(t, platform, SET_TENANT, {
          t: aurora.Tenant,
          b: {
            imageRegistries: ['nvcr.io/nvidia'],
            datasetLocations: ['s3://aurora-datasets'],
            artifactStores: ['s3://aurora-models'],
          },
        });
      }
    },
  );

  it('an artifact store on the node is refused, and no boundary may allow one', async () => {
    const error = await expectRefusedBoth({ artifactStore: 'hostpath://node/models' });
    expect(error.extensions?.field).toBe('container.artifactStore');
    await expectRefusedUnchanged(
      t,
      platform,
      SET_TENANT,
      { t: aurora.Tenant, b: { datasetLocations: ['hostpath://node'] } },
      'BAD_USER_INPUT',
    );
    await expectRefusedUnchanged(
      t,
      platform,
      SET_TENANT,
      { t: aurora.Tenant, b: { artifactStores: ['file://localhost/models'] } },
      'BAD_USER_INPUT',
    );
  });

  it('the safe settings are accepted; only the user and group are stored and read back; env stays out of the audit log', async () => {
    const secret = 'sk-security-test-secret-42';
    const securityContext = {
      runAsUser: 1000,
      runAsGroup: 3000,
      runAsNonRoot: true,
      privileged: false,
      allowPrivilegeEscalation: false,
      addCapabilities: [],
    };
    const preview = await expectOk(t, max, PREVIEW, submission({ securityContext }));
    expect(typeof preview.previewJob.admissible).toBe('boolean');
    const id = (
      await expectOk(
        t,
        max,
        SUBMIT,
        submission({ securityContext, env: [{ name: 'API_KEY', value: secret }] }),
      )
    ).submitJob.id;

    const read = await expectOk(t, max, CONTAINER, { id });
    expect(read.node.container.securityContext).toEqual({ runAsUser: 1000, runAsGroup: 3000 });
    expect((await expectOk(t, ada, CONTAINER, { id })).node.container.env).toEqual([
      { name: 'API_KEY', value: secret },
    ]);

    const rawId = Buffer.from(id, 'base64').toString().split(':')[1]!;
    const row = await t.app.orm.em.fork().findOneOrFail(Job, { id: rawId }, { filters: false });
    expect((row.workload as { container: Record<string, unknown> }).container.securityContext).toEqual({
      runAsUser: 1000,
      runAsGroup: 3000,
    });

    const log = await expectOk(
      t,
      ada,
      `query($id: ID!) { auditEvents(tenantId: $id, last: 200) { edges { node { action input } } } }`,
      { id: aurora.Tenant },
    );
    expect(JSON.stringify(log)).not.toContain(secret);
    const event = log.auditEvents.edges
      .map((e: { node: { action: string; input: any } }) => e.node)
      .filter((n: { action: string }) => n.action === 'job.submit')
      .at(-1);
    expect(event.input.workload.container.env).toEqual([{ name: 'API_KEY', value: '[redacted]' }]);
    expect(event.input.workload.container.securityContext).toEqual({ runAsUser: 1000, runAsGroup: 3000 });
  });

  it('a security context choosing neither user nor group stores none and reads null; a group alone is kept', async () => {
    const onlyFlags = (
      await expectOk(
        t,
        max,
        SUBMIT,
        submission({ securityContext: { privileged: false, runAsNonRoot: true } }),
      )
    ).submitJob.id;
    expect((await expectOk(t, max, CONTAINER, { id: onlyFlags })).node.container.securityContext).toBeNull();
    const rawId = Buffer.from(onlyFlags, 'base64').toString().split(':')[1]!;
    const row = await t.app.orm.em.fork().findOneOrFail(Job, { id: rawId }, { filters: false });
    expect((row.workload as { container: Record<string, unknown> }).container).not.toHaveProperty(
      'securityContext',
    );

    const groupOnly = (await expectOk(t, max, SUBMIT, submission({ securityContext: { runAsGroup: 0 } })))
      .submitJob.id;
    expect((await expectOk(t, max, CONTAINER, { id: groupOnly })).node.container.securityContext).toEqual({
      runAsUser: null,
      runAsGroup: 0,
    });
  });
});
