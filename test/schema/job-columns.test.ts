import { parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_FIELD_COLUMNS, jobColumnsOf } from '../../schema/job-columns.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

/**
 * Queue.jobs reads only the columns its selection needs (schema/job-columns.ts): every Job
 * field allowed on such a narrow read answers exactly what it answers from a full row.
 */
let t: TestApp;
let queueId: string;
let admin: string;

beforeAll(async () => {
  t = await startTestApp();
  const ids = await t.idsOf('aurora-research');
  queueId = ids.Queue!;
  admin = t.token('aurora-research', 'TENANT_ADMIN');
  const jobs = Array.from({ length: 40 }, (_, i) => ({
    queueId,
    name: `columns-${i}`,
    podSets: [{ gpusPerPod: 1 }],
    expectedDurationSeconds: i % 3 ? 1e6 : 1,
  }));
  const res = await t.gql(admin, 'mutation($jobs: [SubmitJobInput!]!) { submitJobs(jobs: $jobs) { id } }', {
    jobs,
  });
  expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
  // Some admitted, some finished, some pending.
  await new Promise((r) => setTimeout(r, 1500));
});
afterAll(async () => {
  await t?.close();
});

const page = (selection: string) =>
  `query($id: ID!) { node(id: $id) { ... on Queue { jobs(last: 50) { edges { node { ${selection} } } } } } }`;

function nodes(body: { data?: any; errors?: unknown }): Record<string, unknown>[] {
  expect(body.errors, JSON.stringify(body)).toBeUndefined();
  return body.data.node.jobs.edges.map((e: { node: Record<string, unknown> }) => e.node);
}

describe('narrow job pages', () => {
  for (const field of Object.keys(JOB_FIELD_COLUMNS)) {
    const selection =
      field === 'queue' || field === 'project'
        ? `${field} { name }`
        : field === 'position'
          ? 'position { inQueue }'
          : field === 'pendingReason'
            ? 'pendingReason { code }'
            : field;
    it(`${field}: the same from a narrow read as from a full one`, async () => {
      // podSets is read from a column no narrow read takes: its presence makes the read a full one.
      const narrow = nodes((await t.gql(admin, page(`name ${selection}`), { id: queueId })).body);
      const full = nodes(
        (await t.gql(admin, page(`name ${selection} podSets { count }`), { id: queueId })).body,
      );
      expect(narrow.length).toBeGreaterThan(10);
      expect(narrow).toEqual(full.map(({ podSets: _, ...rest }) => rest));
    });
  }

  it('the tenant dashboard reads a handful of columns; a field not listed, or a fragment, is followed', () => {
    const info = (text: string) => {
      const document = parse(text);
      const operation = document.definitions.find((d) => d.kind === 'OperationDefinition')!;
      const jobs = (operation as any).selectionSet.selections[0];
      const fragments = Object.fromEntries(
        document.definitions
          .filter((d) => d.kind === 'FragmentDefinition')
          .map((d: any) => [d.name.value, d]),
      );
      return jobColumnsOf({ fieldNodes: [jobs], fragments } as never);
    };
    expect(
      info('{ jobs(last: 50) { edges { node { name state project { name } position { inQueue } } } } }'),
    ).toEqual([]);
    expect(
      info('{ jobs { pageInfo { hasNextPage } edges { cursor node { id gpus submittedAt } } } }'),
    ).toEqual(['gpus_requested', 'submitted_at']);
    expect(
      info('{ jobs { edges { node { ...J } } } } fragment J on Job { ... on Job { exitReason } }'),
    ).toEqual(['exit_reason']);
    expect(info('{ jobs { edges { node { name podSets { count } } } } }')).toBeUndefined();
    expect(info('{ jobs { edges { node { ...Missing } } } }')).toBeUndefined();
  });
});
