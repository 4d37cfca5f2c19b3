import { encodeGlobalID } from '@pothos/plugin-relay';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterNode, Cohort, Flavor, NodePool, Queue } from '../../../src/persistence/cluster/entities.js';
import { uuidv7 } from '../../../src/persistence/ids.js';
import { Job, JobEvent } from '../../../src/persistence/jobs/entities.js';
import { OutboxEntry } from '../../../src/persistence/scheduling/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../../src/persistence/tenant-filter.js';
import { codesOf, type GqlResponse, startTestApp, type TestApp } from '../../helpers/harness.js';

/**
 * Jobs and cluster configuration: every refused request says what is wrong, carries the
 * right code, and writes nothing (no job, no event, no outbox row, no configuration row,
 * nothing new in the scheduler).
 */
let t: TestApp;
let member: string;
let viewer: string;
let platform: string;
let tenantAdmin: string;
const ids: { queue: string; tenant: string; pendingJob: string } = { queue: '', tenant: '', pendingJob: '' };

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible borrowed mode reason message placement { flavor pods } wouldPreempt { reason } } }`;
const CANCEL = `mutation($id: ID!) { cancelJob(id: $id) { id state } }`;
const CREATE_QUEUE = `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id name } }`;
const CREATE_POOL = `mutation($in: CreateNodePoolInput!) { createNodePool(input: $in) { id name } }`;
const CREATE_FLAVOR = `mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { id name } }`;

function systemEm() {
  const em = t.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  return em;
}

/** Every row a job or configuration change could write (audit rows aside: refusals are audited on purpose).
 *
 */
async function counts() {
  const em = systemEm();
  const scheduling: Record<string, number> = {};
  for (const [name, entity] of Object.entries({
    Job,
    JobEvent,
    OutboxEntry,
    Queue,
    Flavor,
    NodePool,
    ClusterNode,
    Cohort,
  }))
    scheduling[name] = await em.count(entity as never, {});
  return { ...(await t.rowCounts({ ignoreAudit: true })), ...scheduling };
}

/** What the in-memory scheduler holds: a refused change must not reach it either. */
function schedulerView() {
  const status = t.app.scheduler.queueStatus('aurora-training');
  return {
    nodes: t.app.scheduler.nodeStatus().length,
    pending: status?.pendingCount,
    admitted: status?.admittedCount,
  };
}

const job = (over: Record<string, unknown> = {}, podSet: Record<string, unknown> = {}) => ({
  in: {
    queueId: ids.queue,
    name: 'bad input probe',
    podSets: [{ gpusPerPod: 1, ...podSet }],
    expectedDurationSeconds: 600,
    ...over,
  },
});
const queueInput = (over: Record<string, unknown> = {}) => ({
  in: { name: 'probe-queue', tenantId: ids.tenant, quotas: [{ flavor: 'h100-80g', nominal: 4 }], ...over },
});
const window = (over: Record<string, unknown> = {}) =>
  queueInput({
    timeWindows: [
      {
        days: [1, 2, 3, 4, 5],
        start: '08:00',
        end: '20:00',
        timeZone: 'Europe/Berlin',
        quotas: [{ flavor: 'h100-80g', nominal: 8 }],
        ...over,
      },
    ],
  });
const node = (name: string, flavor = 'h100-80g') => ({
  name,
  flavor,
  gpus: 8,
  cpuMillis: 96_000,
  memoryMiB: 512_000,
});

beforeAll(async () => {
  t = await startTestApp();
  member = t.token('aurora-research', 'MEMBER');
  viewer = t.token('aurora-research', 'VIEWER');
  tenantAdmin = t.token('aurora-research', 'TENANT_ADMIN');
  platform = t.token(null, 'PLATFORM_ADMIN');
  const em = systemEm();
  const tenant = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
  const queue = await em.findOneOrFail(Queue, { name: 'aurora-training' });
  ids.tenant = encodeGlobalID('Tenant', tenant.id);
  ids.queue = encodeGlobalID('Queue', queue.id);
  // A job that stays PENDING (40 H100s is more than the whole cohort), for the viewer to try to cancel.
  const pending = await t.gql(member, SUBMIT, {
    in: {
      queueId: ids.queue,
      name: 'waits forever',
      podSets: [{ count: 5, gpusPerPod: 8, flavors: ['h100-80g'] }],
      expectedDurationSeconds: 60,
    },
  });
  expect(pending.body.errors, JSON.stringify(pending.body.errors)).toBeUndefined();
  ids.pendingJob = pending.body.data!.submitJob.id;
  // Let the scheduler see it, so later scheduler views compare like with like.
  const deadline = Date.now() + 5000;
  while (
    t.app.scheduler.explain(Buffer.from(ids.pendingJob, 'base64').toString().split(':')[1]!) === null &&
    Date.now() < deadline
  )
    await new Promise((r) => setTimeout(r, 20));
});
afterAll(async () => {
  await t?.close();
});

interface Case {
  name: string;
  as: () => string;
  query: string;
  variables: () => Record<string, unknown>;
  code: string;
  message: RegExp;
}

const submitCases: Case[] = [
  {
    name: 'unknown queue (well-formed ID of nothing)',
    as: () => member,
    query: SUBMIT,
    variables: () => job({ queueId: encodeGlobalID('Queue', uuidv7()) }),
    code: 'NOT_FOUND',
    message: /Queue not found/,
  },
  {
    name: 'malformed queue ID',
    as: () => member,
    query: SUBMIT,
    variables: () => job({ queueId: 'not-a-queue!!' }),
    code: 'BAD_USER_INPUT',
    message: /"not-a-queue!!" is not a valid ID/,
  },
  {
    name: 'ID of another type as queue',
    as: () => member,
    query: SUBMIT,
    variables: () => job({ queueId: ids.tenant }),
    code: 'NOT_FOUND',
    message: /Queue not found/,
  },
  {
    name: 'unknown flavor in podSets.flavors',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { flavors: ['tpu-v5e'] }),
    code: 'BAD_USER_INPUT',
    message: /flavor tpu-v5e is unknown/,
  },
  {
    name: 'unknown priority class',
    as: () => member,
    query: SUBMIT,
    variables: () => job({ priorityClass: 'urgent-now' }),
    code: 'BAD_USER_INPUT',
    message: /unknown priority class urgent-now/,
  },
  {
    name: 'a pod larger than any node (9 GPUs on 8-GPU nodes)',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { gpusPerPod: 9, flavors: ['h100-80g'] }),
    code: 'BAD_USER_INPUT',
    message: /larger than any (eligible )?node/,
  },
  {
    name: 'a pod larger than any node (CPU)',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { cpuMillisPerPod: 500_000 }),
    code: 'BAD_USER_INPUT',
    message: /larger than any (eligible )?node/,
  },
  {
    name: 'negative GPUs',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { gpusPerPod: -1 }),
    code: 'BAD_USER_INPUT',
    message: /gpusPerPod: must not be negative/,
  },
  {
    name: 'negative CPU',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { cpuMillisPerPod: -100 }),
    code: 'BAD_USER_INPUT',
    message: /cpuMillisPerPod: must not be negative/,
  },
  {
    name: 'negative memory',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { memoryMiBPerPod: -1 }),
    code: 'BAD_USER_INPUT',
    message: /memoryMiBPerPod: must not be negative/,
  },
  {
    name: 'zero pods',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { count: 0 }),
    code: 'BAD_USER_INPUT',
    message: /count: at least one pod/,
  },
  {
    name: 'fractional GPU not in 1/1000 steps',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { gpusPerPod: 0.0005 }),
    code: 'BAD_USER_INPUT',
    message: /gpusPerPod: use steps of 1\/1000/,
  },
  {
    name: 'minCount above count',
    as: () => member,
    query: SUBMIT,
    variables: () => job({}, { count: 2, minCount: 3 }),
    code: 'BAD_USER_INPUT',
    message: /minCount/,
  },
  {
    name: 'no pod sets',
    as: () => member,
    query: SUBMIT,
    variables: () => ({ in: { ...job().in, podSets: [] } }),
    code: 'BAD_USER_INPUT',
    message: /podSets: give at least one pod set/,
  },
  {
    name: 'too-long name',
    as: () => member,
    query: SUBMIT,
    variables: () => job({ name: 'j'.repeat(201) }),
    code: 'BAD_USER_INPUT',
    message: /name: must be at most 200 characters/,
  },
  {
    name: 'negative expectedDurationSeconds',
    as: () => member,
    query: SUBMIT,
    variables: () => job({ expectedDurationSeconds: -5 }),
    code: 'BAD_USER_INPUT',
    message: /expectedDurationSeconds: must be positive/,
  },
  // A caller of one tenant gets its default project and that project's queue; a caller of none (or several)
  // must name one.
  {
    name: 'no queue and no project, from a caller of no tenant',
    as: () => platform,
    query: SUBMIT,
    variables: () => ({ in: { name: 'nowhere', podSets: [{ gpusPerPod: 1 }] } }),
    code: 'BAD_USER_INPUT',
    message: /Name a queue/,
  },
  {
    name: 'preview with an unknown flavor is refused too',
    as: () => member,
    query: PREVIEW,
    variables: () => job({}, { flavors: ['tpu-v5e'] }),
    code: 'BAD_USER_INPUT',
    message: /flavor tpu-v5e is unknown/,
  },
  {
    name: 'preview of a pod larger than any node',
    as: () => member,
    query: PREVIEW,
    variables: () => job({}, { gpusPerPod: 9, flavors: ['h100-80g'] }),
    code: 'BAD_USER_INPUT',
    message: /larger than any (eligible )?node/,
  },
  {
    name: 'submit by a VIEWER',
    as: () => viewer,
    query: SUBMIT,
    variables: () => job(),
    code: 'FORBIDDEN',
    message: /jobs:write|not allowed|role/i,
  },
  {
    name: 'cancel by a VIEWER',
    as: () => viewer,
    query: CANCEL,
    variables: () => ({ id: ids.pendingJob }),
    code: 'FORBIDDEN',
    message: /jobs:write|not allowed|role/i,
  },
  {
    name: "submit into another tenant's queue",
    as: () => t.token('borealis-inference', 'MEMBER'),
    query: SUBMIT,
    variables: () => job(),
    code: 'NOT_FOUND',
    message: /Queue not found/,
  },
];

const configCases: Case[] = [
  {
    name: 'createQueue with an unknown flavor in quotas',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => queueInput({ quotas: [{ flavor: 'tpu-v5e', nominal: 4 }] }),
    code: 'BAD_USER_INPUT',
    message: /unknown flavor tpu-v5e/,
  },
  {
    name: 'createQueue with a negative nominal',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => queueInput({ quotas: [{ flavor: 'h100-80g', nominal: -4 }] }),
    code: 'BAD_USER_INPUT',
    message: /nominal: must not be negative/,
  },
  {
    name: 'createQueue with a negative borrowing limit',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => queueInput({ quotas: [{ flavor: 'h100-80g', nominal: 4, borrowingLimit: -1 }] }),
    code: 'BAD_USER_INPUT',
    message: /borrowingLimit: must not be negative/,
  },
  {
    name: 'time window: bad HH:MM',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => window({ start: '25:00' }),
    code: 'BAD_USER_INPUT',
    message: /start: use HH:MM/,
  },
  {
    name: 'time window: H:MM without leading zero',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => window({ end: '8:00' }),
    code: 'BAD_USER_INPUT',
    message: /end: use HH:MM/,
  },
  {
    name: 'time window: day 7',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => window({ days: [1, 7] }),
    code: 'BAD_USER_INPUT',
    message: /days are 0 \(Sunday\) to 6/,
  },
  {
    name: 'time window: no days',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => window({ days: [] }),
    code: 'BAD_USER_INPUT',
    message: /at least one day/,
  },
  {
    name: 'time window: unknown time zone',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => window({ timeZone: 'Mars/Olympus_Mons' }),
    code: 'BAD_USER_INPUT',
    message: /IANA time zone/,
  },
  {
    name: 'time window: unknown flavor in its quotas',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => window({ quotas: [{ flavor: 'tpu-v5e', nominal: 8 }] }),
    code: 'BAD_USER_INPUT',
    message: /tpu-v5e/,
  },
  {
    name: 'createQueue: duplicate queue name',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => queueInput({ name: 'aurora-training' }),
    code: 'CONFLICT',
    message: /queue named "aurora-training" already exists/,
  },
  {
    name: 'createQueue for a tenant that does not exist',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => queueInput({ tenantId: encodeGlobalID('Tenant', uuidv7()) }),
    code: 'NOT_FOUND',
    message: /Tenant not found/,
  },
  {
    name: 'createQueue in a cohort that does not exist',
    as: () => platform,
    query: CREATE_QUEUE,
    variables: () => queueInput({ cohortId: encodeGlobalID('Cohort', uuidv7()) }),
    code: 'NOT_FOUND',
    message: /Cohort not found/,
  },
  {
    name: 'createQueue by a tenant admin',
    as: () => tenantAdmin,
    query: CREATE_QUEUE,
    variables: () => queueInput(),
    code: 'FORBIDDEN',
    message: /createQueue/,
  },
  {
    name: 'createNodePool with an unknown flavor',
    as: () => platform,
    query: CREATE_POOL,
    variables: () => ({ in: { name: 'probe-pool', nodes: [node('probe-1'), node('probe-2', 'tpu-v5e')] } }),
    code: 'BAD_USER_INPUT',
    message: /probe-2: unknown flavor "tpu-v5e"/,
  },
  {
    name: 'createNodePool with duplicate node names',
    as: () => platform,
    query: CREATE_POOL,
    variables: () => ({ in: { name: 'probe-pool', nodes: [node('probe-1'), node('probe-1')] } }),
    code: 'BAD_USER_INPUT',
    message: /Node names must be unique/,
  },
  {
    name: 'createNodePool with a node name already taken',
    as: () => platform,
    query: CREATE_POOL,
    variables: () => ({ in: { name: 'probe-pool', nodes: [node('h100-node-1')] } }),
    code: 'CONFLICT',
    message: /already exists/,
  },
  {
    name: 'createNodePool with negative GPUs',
    as: () => platform,
    query: CREATE_POOL,
    variables: () => ({ in: { name: 'probe-pool', nodes: [{ ...node('probe-1'), gpus: -8 }] } }),
    code: 'BAD_USER_INPUT',
    message: /gpus: must not be negative/,
  },
  {
    name: 'createFlavor MIG without slicesPerGpu',
    as: () => platform,
    query: CREATE_FLAVOR,
    variables: () => ({ in: { name: 'a100-2g.20gb', kind: 'MIG', pricePerUnitHour: 0.9 } }),
    code: 'BAD_USER_INPUT',
    message: /slicesPerGpu/,
  },
  {
    name: 'createFlavor TIMESLICE without slicesPerGpu',
    as: () => platform,
    query: CREATE_FLAVOR,
    variables: () => ({ in: { name: 'l4-shared', kind: 'TIMESLICE', pricePerUnitHour: 0.2 } }),
    code: 'BAD_USER_INPUT',
    message: /slicesPerGpu/,
  },
  {
    name: 'createFlavor with a negative price',
    as: () => platform,
    query: CREATE_FLAVOR,
    variables: () => ({ in: { name: 'cheap', kind: 'GPU', pricePerUnitHour: -1 } }),
    code: 'BAD_USER_INPUT',
    message: /pricePerUnitHour: must not be negative/,
  },
  {
    name: 'createFlavor: duplicate name',
    as: () => platform,
    query: CREATE_FLAVOR,
    variables: () => ({ in: { name: 'h100-80g', kind: 'GPU', pricePerUnitHour: 1 } }),
    code: 'CONFLICT',
    message: /flavor named "h100-80g" already exists/,
  },
];

async function expectRefused({ as, query, variables, code, message }: Case) {
  const before = await counts();
  const scheduler = schedulerView();
  const res: GqlResponse = await t.gql(as(), query, variables());
  expect(
    res.body.data?.[Object.keys(res.body.data ?? {})[0] ?? ''] ?? null,
    JSON.stringify(res.body),
  ).toBeNull();
  expect(codesOf(res), JSON.stringify(res.body)).toEqual([code]);
  const text = res.body.errors!.map((e) => e.message).join(' | ');
  expect(text).toMatch(message);
  // The caller's words, not the server's insides.
  expect(text).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/);
  expect(JSON.stringify(res.body)).not.toMatch(
    /\s+at\s+\S+\s+\(|node_modules|stack|SchedulerInputError|Unexpected error/i,
  );
  // Let a wrongly sent wake-up or config rebuild land before comparing.
  await new Promise((r) => setTimeout(r, 20));
  expect(await counts()).toEqual(before);
  expect(schedulerView()).toEqual(scheduler);
  expect(t.app.scheduler.queueStatus('probe-queue')).toBeNull();
}

describe('job submissions with bad input are refused clearly and write nothing', () => {
  it.each(submitCases)('$name → $code', expectRefused);
});

describe('cluster configuration with bad input is refused clearly and writes nothing', () => {
  it.each(configCases)('$name → $code', expectRefused);
});

describe('what a refusal leaves behind', () => {
  it('the job a viewer tried to cancel is still pending', async () => {
    const res = await t.gql(member, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, {
      id: ids.pendingJob,
    });
    expect(res.body.data!.node.state).toBe('PENDING');
  });

  it('the refused configuration is nowhere in the graph', async () => {
    const res = await t.gql(
      platform,
      `{ flavors { name } nodePools { name nodes { name } } queues { name } }`,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.flavors.map((f: any) => f.name).sort()).toEqual(['a100-1g.10gb', 'h100-80g']);
    expect(res.body.data!.nodePools.map((p: any) => p.name)).toEqual(['shared']);
    expect(res.body.data!.nodePools[0].nodes).toHaveLength(6);
    expect(res.body.data!.queues.map((q: any) => q.name).sort()).toEqual([
      'aurora-training',
      'borealis-serving',
    ]);
  });
});

describe('previewJob is a what-if', () => {
  it('answers for a small job (fits, no borrowing) and changes nothing', async () => {
    const before = await counts();
    const scheduler = schedulerView();
    const res = await t.gql(member, PREVIEW, {
      in: {
        queueId: ids.queue,
        name: 'what if',
        podSets: [{ gpusPerPod: 2, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 600,
      },
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    expect(res.body.data!.previewJob).toMatchObject({
      admissible: true,
      borrowed: false,
      mode: 'fit',
      wouldPreempt: [],
    });
    expect(res.body.data!.previewJob.placement).toEqual([{ flavor: 'h100-80g', pods: 1 }]);
    await new Promise((r) => setTimeout(r, 50));
    expect(await counts()).toEqual(before);
    expect(schedulerView()).toEqual(scheduler);
  });

  it('says when a job would borrow from the cohort (24 H100s on ELASTIC borealis, nominal 16), still changing nothing', async () => {
    const borealisQueue = encodeGlobalID(
      'Queue',
      (await systemEm().findOneOrFail(Queue, { name: 'borealis-serving' })).id,
    );
    const before = await counts();
    const res = await t.gql(t.token('borealis-inference', 'MEMBER'), PREVIEW, {
      in: {
        queueId: borealisQueue,
        name: 'what if big',
        podSets: [{ count: 3, gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 600,
      },
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    expect(res.body.data!.previewJob).toMatchObject({
      admissible: true,
      borrowed: true,
      mode: 'borrow',
      wouldPreempt: [],
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await counts()).toEqual(before);
  });

  it('says why a job would not be admitted (GUARANTEED aurora never borrows past its nominal 16)', async () => {
    const before = await counts();
    const res = await t.gql(member, PREVIEW, {
      in: {
        queueId: ids.queue,
        name: 'what if big',
        podSets: [{ count: 3, gpusPerPod: 8, flavors: ['h100-80g'] }],
      },
    });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    expect(res.body.data!.previewJob).toMatchObject({
      admissible: false,
      borrowed: false,
      mode: null,
      reason: 'ExceedsMaxQuota',
      placement: [],
    });
    expect(res.body.data!.previewJob.message).toMatch(/requested 24 exceeds .*\(16\)/);
    expect(await counts()).toEqual(before);
  });

  it('a viewer may not preview into a queue either (it needs jobs:write)', async () => {
    const res = await t.gql(viewer, PREVIEW, job());
    expect(codesOf(res)).toEqual(['FORBIDDEN']);
  });
});
