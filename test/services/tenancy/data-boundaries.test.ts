import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import {
  codesOf,
  expectOk,
  expectRefusedUnchanged,
  startTestApp,
  type TestApp,
} from '../../helpers/harness.js';

let t: TestApp;
let aurora: Record<string, string>;
let platform: string;
let ada: string;
let max: string;
let vera: string;
let otto: string;
let bea: string;
let serial = 0;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible } }`;
const SET_TENANT = `mutation($t: ID!, $b: DataBoundariesInput!) { setTenantDataBoundaries(tenantId: $t, boundaries: $b) { dataBoundaries { imageRegistries datasetLocations artifactStores } } }`;
const SET_PROJECT = `mutation($p: ID!, $b: DataBoundariesInput!) { setProjectDataBoundaries(projectId: $p, boundaries: $b) { dataBoundaries { imageRegistries datasetLocations artifactStores } effectiveDataBoundaries { imageRegistries datasetLocations artifactStores } } }`;
const CONTAINER = `query($id: ID!) { node(id: $id) { ... on Job { name container { image command args env { name value } datasets { location mountPath readOnly } artifactStore } } } }`;

const allowed = {
  image: 'nvcr.io/nvidia/pytorch:24.01-py3',
  datasets: [{ location: 's3://aurora-datasets/imagenet', mountPath: '/data' }],
  artifactStore: 's3://aurora-models/run-1',
};
const submission = (container: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  in: {
    queueId: aurora.Queue,
    name: `bounded-${++serial}`,
    podSets: [{ gpusPerPod: 1 }],
    expectedDurationSeconds: 60,
    container: { ...allowed, ...container },
    ...extra,
  },
});

describeEachDialect('data boundaries and the container', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    platform = t.token(null, 'PLATFORM_ADMIN');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    max = t.token('aurora-research', 'MEMBER');
    vera = t.token('aurora-research', 'VIEWER');
    otto = t.token('aurora-research', 'AUDITOR');
    bea = t.token('borealis-inference', 'TENANT_ADMIN');
  });
  afterAll(async () => {
    await t?.close();
  });

  describe("the tenant's data boundaries (set by platform admins)", () => {
    it('the demo bounds Aurora; members read the boundaries', async () => {
      const data = await expectOk(
        t,
        max,
        `{ tenant(slug: "aurora-research") { dataBoundaries { imageRegistries datasetLocations artifactStores } } }`,
        {},
      );
      expect(data.tenant.dataBoundaries).toEqual({
        imageRegistries: ['nvcr.io/nvidia', 'registry.aurora.example'],
        datasetLocations: ['s3://aurora-datasets'],
        artifactStores: ['s3://aurora-models'],
      });
    });

    it('a container within them is accepted', async () => {
      await expectOk(t, max, SUBMIT, submission({}));
      await expectOk(
        t,
        max,
        SUBMIT,
        submission({
          image: `registry.aurora.example/team/trainer@sha256:${'a'.repeat(64)}`,
          datasets: [],
          artifactStore: null,
        }),
      );
    });

    it.each([
      [
        'an image from Docker Hub',
        { image: 'ubuntu:22.04' },
        /Image "ubuntu:22.04" is not within the image registries tenant "aurora-research" allows \(allowed: nvcr.io\/nvidia, registry.aurora.example\)/,
      ],
      [
        'an image from a look-alike registry',
        { image: 'registry.aurora.example.evil.io/x:1' },
        /Image "registry.aurora.example.evil.io\/x:1"/,
      ],
      [
        'an image from a sibling namespace',
        { image: 'nvcr.io/nvidia-evil/pytorch' },
        /Image "nvcr.io\/nvidia-evil\/pytorch"/,
      ],
      [
        'a dataset elsewhere',
        { datasets: [{ location: 's3://aurora-datasets-private/x', mountPath: '/data' }] },
        /Dataset location "s3:\/\/aurora-datasets-private\/x".*allowed: s3:\/\/aurora-datasets\)/,
      ],
      [
        'a dataset escaping with ..',
        { datasets: [{ location: 's3://aurora-datasets/../secrets', mountPath: '/data' }] },
        /Dataset location: .*".." segment/,
      ],
      [
        'a percent-encoded dataset path',
        { datasets: [{ location: 's3://aurora-datasets/%2e%2e/x', mountPath: '/data' }] },
        /percent-encoded/,
      ],
      [
        'a relative dataset path',
        { datasets: [{ location: 'aurora-datasets/x', mountPath: '/data' }] },
        /not an absolute URI/,
      ],
      [
        'an artifact store elsewhere',
        { artifactStore: 's3://aurora-datasets/models' },
        /Artifact store "s3:\/\/aurora-datasets\/models".*allowed: s3:\/\/aurora-models\)/,
      ],
    ])(
      '%s is refused (BAD_USER_INPUT, nothing written), in submit and preview',
      async (_what, container, message) => {
        const res = await expectRefusedUnchanged(t, max, SUBMIT, submission(container), 'BAD_USER_INPUT');
        expect(res.body.errors![0]!.message).toMatch(message);
        await expectRefusedUnchanged(t, max, PREVIEW, submission(container), 'BAD_USER_INPUT');
      },
    );

    it('only platform admins set them; an entry that is no registry or URI is refused', async () => {
      const bounds = { imageRegistries: ['nvcr.io/nvidia'], datasetLocations: null, artifactStores: [] };
      await expectRefusedUnchanged(t, ada, SET_TENANT, { t: aurora.Tenant, b: bounds }, 'FORBIDDEN');
      await expectRefusedUnchanged(t, bea, SET_TENANT, { t: aurora.Tenant, b: bounds }, 'FORBIDDEN');
      await expectRefusedUnchanged(
        t,
        platform,
        SET_TENANT,
        { t: aurora.Tenant, b: { imageRegistries: ['myorg'] } },
        'BAD_USER_INPUT',
      );
      await expectRefusedUnchanged(
        t,
        platform,
        SET_TENANT,
        { t: aurora.Tenant, b: { datasetLocations: ['/mnt/data'] } },
        'BAD_USER_INPUT',
      );
    });
  });

  describe("a project's data boundaries (set by its admins, within the tenant's)", () => {
    it("entries must lie within the tenant's lists; nothing is written otherwise", async () => {
      const outside = await expectRefusedUnchanged(
        t,
        ada,
        SET_PROJECT,
        { p: aurora.Project, b: { imageRegistries: ['nvcr.io/nvidia/pytorch', 'docker.io/library'] } },
        'BAD_USER_INPUT',
      );
      expect(outside.body.errors![0]!.message).toMatch(
        /"docker.io\/library" is not within the image registries tenant "aurora-research" allows/,
      );
      await expectRefusedUnchanged(
        t,
        ada,
        SET_PROJECT,
        { p: aurora.Project, b: { datasetLocations: ['s3://aurora-datasets-2'] } },
        'BAD_USER_INPUT',
      );
      await expectRefusedUnchanged(
        t,
        ada,
        SET_PROJECT,
        { p: aurora.Project, b: { artifactStores: ['gs://aurora-models'] } },
        'BAD_USER_INPUT',
      );
      // Not a project admin (a contributor), a read-only member, another tenant's admin.
      await expectRefusedUnchanged(
        t,
        max,
        SET_PROJECT,
        { p: aurora.Project, b: { imageRegistries: ['nvcr.io/nvidia/pytorch'] } },
        'FORBIDDEN',
      );
      await expectRefusedUnchanged(
        t,
        vera,
        SET_PROJECT,
        { p: aurora.Project, b: { imageRegistries: ['nvcr.io/nvidia/pytorch'] } },
        'FORBIDDEN',
      );
      await expectRefusedUnchanged(
        t,
        bea,
        SET_PROJECT,
        { p: aurora.Project, b: { imageRegistries: ['nvcr.io/nvidia/pytorch'] } },
        'NOT_FOUND',
      );
    });

    it('narrowed by the project, submits outside the project list are refused even within the tenant list', async () => {
      const set = await expectOk(t, ada, SET_PROJECT, {
        p: aurora.Project,
        b: {
          imageRegistries: ['NVCR.io/nvidia/pytorch/'],
          datasetLocations: ['s3://aurora-datasets/imagenet'],
          artifactStores: ['s3://aurora-models/llm'],
        },
      });
      expect(set.setProjectDataBoundaries.dataBoundaries).toEqual({
        imageRegistries: ['nvcr.io/nvidia/pytorch'],
        datasetLocations: ['s3://aurora-datasets/imagenet'],
        artifactStores: ['s3://aurora-models/llm'],
      });
      expect(set.setProjectDataBoundaries.effectiveDataBoundaries).toEqual(
        set.setProjectDataBoundaries.dataBoundaries,
      );

      await expectOk(t, max, SUBMIT, submission({ artifactStore: 's3://aurora-models/llm/run-7' }));
      const image = await expectRefusedUnchanged(
        t,
        max,
        SUBMIT,
        submission({ image: 'nvcr.io/nvidia/tensorflow:24.01', artifactStore: 's3://aurora-models/llm/x' }),
        'BAD_USER_INPUT',
      );
      expect(image.body.errors![0]!.message).toMatch(
        /project "llm-pretraining" allows \(allowed: nvcr.io\/nvidia\/pytorch\)/,
      );
      await expectRefusedUnchanged(
        t,
        max,
        SUBMIT,
        submission({
          datasets: [{ location: 's3://aurora-datasets/laion', mountPath: '/data' }],
          artifactStore: 's3://aurora-models/llm/x',
        }),
        'BAD_USER_INPUT',
      );
      const store = await expectRefusedUnchanged(
        t,
        max,
        SUBMIT,
        submission({ artifactStore: 's3://aurora-models/vision' }),
        'BAD_USER_INPUT',
      );
      expect(store.body.errors![0]!.message).toMatch(
        /Artifact store "s3:\/\/aurora-models\/vision".*project "llm-pretraining"/,
      );

      // The platform later narrows the tenant: the project's effective lists follow, its own stay.
      await expectOk(t, platform, SET_TENANT, {
        t: aurora.Tenant,
        b: {
          imageRegistries: ['nvcr.io/nvidia'],
          datasetLocations: ['s3://aurora-datasets'],
          artifactStores: [],
        },
      });
      const project = await expectOk(
        t,
        max,
        `query($id: ID!) { node(id: $id) { ... on Project { effectiveDataBoundaries { artifactStores imageRegistries } } } }`,
        { id: aurora.Project },
      );
      expect(project.node.effectiveDataBoundaries).toEqual({
        artifactStores: [],
        imageRegistries: ['nvcr.io/nvidia/pytorch'],
      });
      await expectRefusedUnchanged(
        t,
        max,
        SUBMIT,
        submission({ artifactStore: 's3://aurora-models/llm/run-8' }),
        'BAD_USER_INPUT',
      );
      // Unrestricted again (null lists) for the tests that follow.
      await expectOk(t, platform, SET_TENANT, { t: aurora.Tenant, b: {} });
      await expectOk(t, ada, SET_PROJECT, { p: aurora.Project, b: {} });
    });

    it('both changes are audited in the tenant log', async () => {
      const log = await expectOk(
        t,
        otto,
        `query($id: ID!) { auditEvents(tenantId: $id, last: 200) { edges { node { action outcome } } } }`,
        { id: aurora.Tenant },
      );
      const actions = log.auditEvents.edges.map(
        (e: { node: { action: string; outcome: string } }) => `${e.node.action} ${e.node.outcome}`,
      );
      for (const expected of [
        'tenant.setDataBoundaries SUCCESS',
        'project.setDataBoundaries SUCCESS',
        'project.setDataBoundaries FAILED',
        'project.setDataBoundaries DENIED',
      ])
        expect(actions).toContain(expected);
    });
  });

  describe('the container', () => {
    it('is refused when malformed or over the limits', async () => {
      const cases: Record<string, unknown>[] = [
        { image: 'x'.repeat(513) },
        { image: 'Not An Image' },
        { command: Array.from({ length: 65 }, () => 'a') },
        { args: Array.from({ length: 65 }, () => 'a') },
        { env: Array.from({ length: 129 }, (_, i) => ({ name: `V${i}`, value: 'x' })) },
        { env: [{ name: '1BAD', value: 'x' }] },
        {
          env: [
            { name: 'A', value: 'x' },
            { name: 'A', value: 'y' },
          ],
        },
        {
          datasets: Array.from({ length: 33 }, (_, i) => ({
            location: `s3://aurora-datasets/${i}`,
            mountPath: `/d${i}`,
          })),
        },
        { datasets: [{ location: 's3://aurora-datasets/x', mountPath: 'relative/path' }] },
        { datasets: [{ location: 's3://aurora-datasets/x', mountPath: '/data/../etc' }] },
      ];
      for (const container of cases)
        await expectRefusedUnchanged(t, max, SUBMIT, submission(container), 'BAD_USER_INPUT');
    });

    it('is stored with the job, its env values kept out of the audit log, and part of the idempotency check', async () => {
      const secret = 'hf_super-secret-value-123';
      const container = {
        command: ['python', 'train.py'],
        args: ['--epochs', '3'],
        env: [
          { name: 'HF_TOKEN', value: secret },
          { name: 'MODE', value: 'full' },
        ],
      };
      const submitted = await expectOk(
        t,
        max,
        SUBMIT,
        submission(container, { idempotencyKey: 'container-key' }),
      );
      const read = await expectOk(t, max, CONTAINER, { id: submitted.submitJob.id });
      expect(read.node.container).toEqual({
        image: allowed.image,
        command: ['python', 'train.py'],
        args: ['--epochs', '3'],
        env: [
          { name: 'HF_TOKEN', value: secret },
          { name: 'MODE', value: 'full' },
        ],
        datasets: [{ location: 's3://aurora-datasets/imagenet', mountPath: '/data', readOnly: true }],
        artifactStore: 's3://aurora-models/run-1',
      });
      const log = await expectOk(
        t,
        ada,
        `query($id: ID!) { auditEvents(tenantId: $id, last: 200) { edges { node { action input } } } }`,
        { id: aurora.Tenant },
      );
      const text = JSON.stringify(log);
      expect(text).not.toContain(secret);
      const event = log.auditEvents.edges
        .map((e: { node: { action: string; input: any } }) => e.node)
        .filter((n: { action: string }) => n.action === 'job.submit')
        .at(-1);
      expect(event.input.workload.container.env).toEqual([
        { name: 'HF_TOKEN', value: '[redacted]' },
        { name: 'MODE', value: '[redacted]' },
      ]);
      expect(event.input.workload.container.image).toBe(allowed.image);
      // The same key with another container is another job: CONFLICT.
      const again = await t.gql(max, SUBMIT, {
        in: {
          ...submission(container, { idempotencyKey: 'container-key' }).in,
          name: (await expectOk(t, max, CONTAINER, { id: submitted.submitJob.id })).node.name,
          container: { ...allowed, ...container, args: ['--epochs', '4'] },
        },
      });
      expect(codesOf(again)).toEqual(['CONFLICT']);
    });

    it('is read by the submitter, tenant admins and project members; not by platform admins nor members outside the project', async () => {
      const mine = (await expectOk(t, max, SUBMIT, submission({ env: [{ name: 'K', value: 'v' }] })))
        .submitJob.id;
      expect((await expectOk(t, max, CONTAINER, { id: mine })).node.container.image).toBe(allowed.image);
      expect((await expectOk(t, ada, CONTAINER, { id: mine })).node.container.env).toEqual([
        { name: 'K', value: 'v' },
      ]);
      expect((await expectOk(t, vera, CONTAINER, { id: mine })).node.container.image).toBe(allowed.image);

      const asPlatform = await t.gql(platform, CONTAINER, { id: mine });
      expect(codesOf(asPlatform)).toEqual(['FORBIDDEN']);
      expect(asPlatform.body.data!.node).toMatchObject({ container: null });
      expect(asPlatform.body.data!.node.name).toMatch(/^bounded-/);

      // A job in a project Max is not in (the demo tenants have projectsOpen=false).
      const vault = (
        await expectOk(t, ada, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
          in: { tenantId: aurora.Tenant, slug: 'vault', name: 'Vault' },
        })
      ).createProject.id;
      const theirs = (await expectOk(t, ada, SUBMIT, submission({}, { projectId: vault }))).submitJob.id;
      for (const outsider of [max, otto]) {
        const res = await t.gql(outsider, CONTAINER, { id: theirs });
        expect(codesOf(res)).toEqual(['FORBIDDEN']);
        expect(res.body.data!.node.container).toBeNull();
        expect(JSON.stringify(res.body)).not.toContain('aurora-datasets');
      }
      expect((await expectOk(t, ada, CONTAINER, { id: theirs })).node.container.image).toBe(allowed.image);
    });
  });
});
