import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesOf, startTestApp, type TestApp } from '../helpers/harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

describe('viewer and tenants', () => {
  it('a tenant admin sees their tenant, projects and member e-mails', async () => {
    const res = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `{ viewer { name authKind memberships { role tenant { slug projects { edges { node { slug } } } members { edges { node { email role } } } } } } }`,
    );
    expect(res.body.errors).toBeUndefined();
    const membership = res.body.data!.viewer.memberships[0];
    expect(membership.role).toBe('TENANT_ADMIN');
    expect(membership.tenant.slug).toBe('aurora-research');
    expect(membership.tenant.projects.edges.map((e: any) => e.node.slug)).toEqual(['llm-pretraining']);
    expect(membership.tenant.members.edges.map((e: any) => e.node.email)).toContain('max@aurora.example');
  });

  it("the demo's first hour: a member submits with neither project nor queue and lands in the default project's queue, within the tenant's data boundaries", async () => {
    const max = t.token('aurora-research', 'MEMBER');
    const projects = await t.gql(
      max,
      `{ tenant(slug: "aurora-research") { defaultProject { slug defaultQueue { name } } } }`,
    );
    expect(projects.body.data!.tenant.defaultProject).toEqual({
      slug: 'llm-pretraining',
      defaultQueue: { name: 'aurora-training' },
    });
    const submitted = await t.gql(
      max,
      `mutation($in: SubmitJobInput!) { submitJob(input: $in) { state project { slug } queue { name } container { image } } }`,
      {
        in: {
          name: 'first-hour',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
          container: {
            image: 'nvcr.io/nvidia/pytorch:24.01-py3',
            datasets: [{ location: 's3://aurora-datasets/llama', mountPath: '/data' }],
          },
        },
      },
    );
    expect(submitted.body.errors, JSON.stringify(submitted.body)).toBeUndefined();
    expect(submitted.body.data!.submitJob).toMatchObject({
      project: { slug: 'llm-pretraining' },
      queue: { name: 'aurora-training' },
      container: { image: 'nvcr.io/nvidia/pytorch:24.01-py3' },
    });
  });

  it('anonymous callers are UNAUTHENTICATED', async () => {
    const res = await t.gql(null, `{ viewer { name } }`);
    expect(codesOf(res)).toEqual(['UNAUTHENTICATED']);
  });

  it('platform token lists every tenant; a member lists only their own', async () => {
    const all = await t.gql(t.token(null, 'PLATFORM_ADMIN'), `{ tenants { edges { node { slug } } } }`);
    expect(all.body.data!.tenants.edges.map((e: any) => e.node.slug).sort()).toEqual([
      'aurora-research',
      'borealis-inference',
    ]);
    const own = await t.gql(
      t.token('borealis-inference', 'MEMBER'),
      `{ tenants { edges { node { slug } } } }`,
    );
    expect(own.body.data!.tenants.edges.map((e: any) => e.node.slug)).toEqual(['borealis-inference']);
  });

  it('a mutation writes its audit event with the request id', async () => {
    const token = t.token('aurora-research', 'TENANT_ADMIN');
    const ids = await t.idsOf('aurora-research');
    const res = await t.gql(
      token,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id slug tenant { slug } } }`,
      { in: { tenantId: ids.Tenant, slug: 'smoke', name: 'Smoke' } },
      { 'x-request-id': 'req-smoke-1' },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.headers.get('x-request-id')).toBe('req-smoke-1');
    const audit = await t.gql(
      t.token('aurora-research', 'AUDITOR'),
      `query($id: ID!) { auditEvents(tenantId: $id, last: 5) { edges { node { action outcome requestId actorName targetId } } } }`,
      { id: ids.Tenant },
    );
    expect(audit.body.errors).toBeUndefined();
    const last = audit.body.data!.auditEvents.edges.at(-1).node;
    expect(last).toMatchObject({
      action: 'project.create',
      outcome: 'SUCCESS',
      requestId: 'req-smoke-1',
      actorName: 'Ada Admin',
      targetId: res.body.data!.createProject.id,
    });
  });
});
