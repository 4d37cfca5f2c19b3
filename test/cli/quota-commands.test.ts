// `fairway quota` against a real gateway on a real port, run in-process through runTenantCommand
// with captured output, as test/cli/tenant.test.ts runs the job commands: a tenant admin files a
// request (PENDING), a platform admin approves it (ACTIVE, the queue's nominal changed) or rejects
// it, the tenant admin withdraws one; a member filing exits 3 with nothing created; bad flags exit
// 2 with nothing sent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/tenant/context.js';
import { runTenantCommand } from '../../src/cli/tenant/index.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

let t: TestApp;
let admin: string;
let member: string;
let auditor: string;
let platform: string;

interface Run {
  code: number;
  out: string;
  err: string;
}

/** One CLI run; the environment has the server and the given token (default: Aurora's tenant admin). */
async function cli(args: string[], options: { token?: string; server?: string } = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const [cmd, ...rest] = args;
  const code = await runTenantCommand(
    cmd!,
    rest,
    { out: (s) => out.push(s), err: (s) => err.push(s) },
    {
      env: {
        FAIRWAY_CONFIG_DIR: '/nonexistent',
        FAIRWAY_SERVER: options.server ?? t.url,
        FAIRWAY_TOKEN: options.token ?? admin,
      },
      stdout: null,
      stdin: Readable.from([]),
    },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const FILE = [
  'quota',
  'file',
  '--queue',
  'aurora-training',
  '--flavor',
  'h100-80g',
  '--reason',
  'end-of-quarter training push',
];

/** Every request (platform admins see them all). */
async function allRequests(): Promise<{ id: string; status: string; nominal: number }[]> {
  const res = await t.gql(platform, `{ quotaRequests(first: 100) { edges { node { id status nominal } } } }`);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data!.quotaRequests.edges.map((e: { node: unknown }) => e.node);
}

/** aurora-training's GPU nominal on h100-80g, as the graph says. */
async function nominal(): Promise<number> {
  const res = await t.gql(platform, `{ queues { name quotas { flavor resource nominal } } }`);
  const queue = res.body.data!.queues.find((q: { name: string }) => q.name === 'aurora-training');
  return queue.quotas.find((q: { flavor: string; resource: string }) => q.flavor === 'h100-80g').nominal;
}

beforeAll(async () => {
  t = await startTestApp();
  admin = t.token('aurora-research', 'TENANT_ADMIN');
  member = t.token('aurora-research', 'MEMBER');
  auditor = t.token('aurora-research', 'AUDITOR');
  platform = t.token(null, 'PLATFORM_ADMIN');
});
afterAll(async () => {
  await t?.close();
});

describe('fairway quota', () => {
  it('a tenant admin files a request (PENDING); a platform admin approves it: ACTIVE, the nominal changed', async () => {
    expect(await nominal()).toBe(16);
    const filed = await cli([...FILE, '--amount', '24']);
    expect(filed.code, filed.err).toBe(EXIT.OK);
    expect(filed.out).toMatch(
      /^request \S+ {2}aurora-training h100-80g → 24 GPU: PENDING \(waiting for a platform admin\); the queue's nominal is 16 GPU until it applies$/,
    );
    const id = filed.out.split(/\s+/)[1]!;

    const listed = await cli(['quota', 'requests', '--status', 'pending']);
    expect(listed.code, listed.err).toBe(EXIT.OK);
    const [header, ...rows] = listed.out.split('\n');
    expect(header).toMatch(/^ID +STATUS +QUEUE +FLAVOR +NOMINAL +BY +AGE$/);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatch(
      new RegExp(
        `^${id.replace(/[+/=]/g, '\\$&')} +PENDING +aurora-training +h100-80g +24 GPU +Ada Admin +\\d+s$`,
      ),
    );
    const json = await cli(['quota', 'requests', '--json']);
    expect(JSON.parse(json.out)).toMatchObject([
      {
        id,
        status: 'PENDING',
        nominal: 24,
        flavor: 'h100-80g',
        resource: 'GPU',
        tenant: { slug: 'aurora-research' },
      },
    ]);

    // The tenant admin cannot approve; the platform admin can.
    const own = await cli(['quota', 'approve', id]);
    expect(own.code).toBe(EXIT.AUTH);
    expect(own.err).toMatch(/\[FORBIDDEN\]$/);
    const approved = await cli(['quota', 'approve', id, '--comment', 'ok for the quarter'], {
      token: platform,
    });
    expect(approved.code, approved.err).toBe(EXIT.OK);
    expect(approved.out).toBe(
      `request ${id}  aurora-training h100-80g → 24 GPU: ACTIVE (approved and applied)\naurora-training's h100-80g nominal: 16 GPU → 24 GPU`,
    );
    expect(await nominal()).toBe(24);

    const shown = await cli(['quota', 'request', id]);
    expect(shown.code, shown.err).toBe(EXIT.OK);
    expect(shown.out).toContain(`request ${id}`);
    expect(shown.out).toMatch(/status +ACTIVE \(approved and applied\)/);
    expect(shown.out).toMatch(/queue +aurora-training, h100-80g gpu nominal now 24 GPU/);
    expect(shown.out).toMatch(/asked +24 GPU \(it was 16 GPU when it applied\)/);
    expect(shown.out).toMatch(/reason +end-of-quarter training push/);
    expect(shown.out).toMatch(/approved +\S+Z by Platform Admin: ok for the quarter/);
    expect(shown.out).toMatch(/applied +\S+Z/);
    const one = JSON.parse((await cli(['quota', 'request', id, '--json'])).out);
    expect(one).toMatchObject({
      id,
      status: 'ACTIVE',
      previousNominal: 16,
      decisionNote: 'ok for the quarter',
    });

    // Approved once: a second approval is a conflict (exit 5).
    expect((await cli(['quota', 'approve', id], { token: platform })).code).toBe(EXIT.CONFLICT);
  });

  it('a rejection needs a comment; a withdrawn request is CANCELLED; --json prints the request', async () => {
    const a = JSON.parse((await cli([...FILE, '--amount', '30', '--json'])).out);
    expect(a).toMatchObject({ status: 'PENDING', nominal: 30 });
    const noComment = await cli(['quota', 'reject', a.id], { token: platform });
    expect(noComment.code).toBe(EXIT.USAGE);
    expect(noComment.err).toMatch(/--comment TEXT is required/);
    const rejected = await cli(['quota', 'reject', a.id, '--comment', 'no room this quarter', '--json'], {
      token: platform,
    });
    expect(rejected.code, rejected.err).toBe(EXIT.OK);
    expect(JSON.parse(rejected.out)).toMatchObject({
      id: a.id,
      status: 'REJECTED',
      decisionNote: 'no room this quarter',
    });
    expect((await cli(['quota', 'request', a.id])).out).toMatch(
      /rejected +\S+Z by Platform Admin: no room this quarter/,
    );

    const b = JSON.parse(
      (await cli([...FILE, '--amount', '32', '--starts', '2099-01-01', '--expires', '2099-02-01', '--json']))
        .out,
    );
    expect(b).toMatchObject({ status: 'PENDING', startsAt: '2099-01-01T00:00:00.000Z' });
    const withdrawn = await cli(['quota', 'withdraw', b.id]);
    expect(withdrawn.code, withdrawn.err).toBe(EXIT.OK);
    expect(withdrawn.out).toMatch(/: CANCELLED \(withdrawn\)$/);
    expect((await cli(['quota', 'requests', '--status', 'cancelled', '--json'])).out).toContain(b.id);
    expect(await nominal()).toBe(24);
  });

  it('a member filing exits 3 and nothing is created; the recommendations are for admins and auditors', async () => {
    const before = await allRequests();
    const res = await cli([...FILE, '--amount', '40'], { token: member });
    expect(res.code).toBe(EXIT.AUTH);
    expect(res.err).toMatch(/^fairway quota: .*\[FORBIDDEN\]$/);
    expect(await allRequests()).toEqual(before);
    // A member may follow the requests, not read the recommendations.
    expect((await cli(['quota', 'requests'], { token: member })).code).toBe(EXIT.OK);
    expect((await cli(['quota', 'recommendations'], { token: member })).code).toBe(EXIT.AUTH);
    const recs = await cli(['quota', 'recommendations', '--days', '7', '--json'], { token: auditor });
    expect(recs.code, recs.err).toBe(EXIT.OK);
    expect(Array.isArray(JSON.parse(recs.out))).toBe(true);
  });

  it('names the tenant does not have exit 4; another tenant sees nothing of Aurora', async () => {
    const queue = await cli([
      'quota',
      'file',
      '--queue',
      'nope',
      '--flavor',
      'h100-80g',
      '--amount',
      '1',
      '--reason',
      'x',
    ]);
    expect(queue.code).toBe(EXIT.NOT_FOUND);
    expect(queue.err).toMatch(/no queue 'nope' in aurora-research \(aurora-training\)/);
    const flavor = await cli([
      'quota',
      'file',
      '--queue',
      'aurora-training',
      '--flavor',
      'b200',
      '--amount',
      '1',
      '--reason',
      'x',
    ]);
    expect(flavor.code).toBe(EXIT.NOT_FOUND);
    const [aurora] = JSON.parse((await cli(['quota', 'requests', '--json'])).out);
    const bob = t.token('borealis-inference', 'MEMBER');
    expect((await cli(['quota', 'request', aurora.id], { token: bob })).code).toBe(EXIT.NOT_FOUND);
    expect(JSON.parse((await cli(['quota', 'requests', '--json'], { token: bob })).out)).toEqual([]);
  });

  describe('bad flags exit 2 with nothing sent', () => {
    let server: http.Server;
    let url: string;
    let hits = 0;
    beforeAll(async () => {
      server = http.createServer((_req, res) => {
        hits++;
        res.writeHead(500).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it.each([
      [['quota'], /a subcommand is required/],
      [['quota', 'grant'], /unknown subcommand 'grant'/],
      [['quota', 'requests', '--colour'], /Unknown option '--colour'/],
      [['quota', 'requests', '--status', 'open'], /--status: 'open' is not one of PENDING/],
      [['quota', 'requests', '--days', '7'], /--days does not go with 'quota requests'/],
      [['quota', 'recommendations', '--days', '91'], /--days must be 1 to 90/],
      [['quota', 'recommendations', '--days', '0'], /--days must be a positive integer/],
      [['quota', 'request'], /ID is required/],
      [['quota', 'request', 'not-an-id'], /'not-an-id' is not a quota request's ID/],
      [['quota', 'file', '--queue', 'q', '--flavor', 'f', '--reason', 'r'], /--amount N is required/],
      [[...FILE, '--amount', 'lots'], /--amount must be a number, 0 or more, got 'lots'/],
      [[...FILE, '--amount=-1'], /--amount must be a number/],
      [[...FILE.slice(0, 6), '--amount', '2'], /--reason TEXT is required/],
      [[...FILE, '--amount', '2', '--expires', 'soon'], /--expires must be a date/],
      [
        [...FILE, '--amount', '2', '--starts', '2099-02-01', '--expires', '2099-01-01'],
        /--expires must be after --starts/,
      ],
      [
        ['quota', 'approve', 'UXVvdGFSZXF1ZXN0OjE=', '--status', 'x'],
        /--status does not go with 'quota approve'/,
      ],
      [['quota', 'reject', 'UXVvdGFSZXF1ZXN0OjE='], /--comment TEXT is required/],
    ])('%j', async (args, message) => {
      const res = await cli(args, { server: url });
      expect(res.code, res.err).toBe(EXIT.USAGE);
      expect(res.err).toMatch(message);
      expect(hits).toBe(0);
    });

    it('--help exits 0 and sends nothing', async () => {
      const res = await cli(['quota', '--help'], { server: url });
      expect(res.code).toBe(EXIT.OK);
      expect(res.out).toMatch(/^usage: fairway quota recommendations/);
      expect(hits).toBe(0);
    });
  });
});
