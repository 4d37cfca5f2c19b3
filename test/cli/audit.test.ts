// `fairway audit` against a real gateway on a real port, run in-process through runTenantCommand
// with captured output, as test/cli/tenant.test.ts runs the job commands: a quota request's records
// (filed, a member's refused attempt, approved) newest first for a tenant admin, --action and --limit across pages,
// --json, --platform for platform admins; a member exits 3; bad flags exit 2 with nothing sent.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/tenant/context.js';
import { runTenantCommand } from '../../src/cli/tenant/index.js';
import { AuditEvent } from '../../src/persistence/audit/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

let t: TestApp;
let admin: string;
let member: string;
let platform: string;
let requestId: string;

interface Run {
  code: number;
  out: string;
  err: string;
}

/** One CLI run; the environment has the server and the given token (default: Aurora's tenant admin). */
async function cli(args: string[], options: { token?: string; server?: string } = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runTenantCommand(
    'audit',
    args,
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

/** `fairway quota …` as the given person; the output parsed as JSON. */
async function quota(token: string, args: string[]): Promise<{ code: number; json: any; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runTenantCommand(
    'quota',
    [...args, '--json'],
    { out: (s) => out.push(s), err: (s) => err.push(s) },
    {
      env: { FAIRWAY_CONFIG_DIR: '/nonexistent', FAIRWAY_SERVER: t.url, FAIRWAY_TOKEN: token },
      stdout: null,
    },
  );
  return { code, json: out.length ? JSON.parse(out.join('\n')) : null, err: err.join('\n') };
}

const escaped = (s: string) => s.replace(/[+/=]/g, '\\$&');

beforeAll(async () => {
  t = await startTestApp();
  admin = t.token('aurora-research', 'TENANT_ADMIN');
  member = t.token('aurora-research', 'MEMBER');
  platform = t.token(null, 'PLATFORM_ADMIN');
  const file = [
    'file',
    '--queue',
    'aurora-training',
    '--flavor',
    'h100-80g',
    '--amount',
    '20',
    '--reason',
    'more room for the sweep',
  ];
  const filed = await quota(admin, file);
  expect(filed.code, filed.err).toBe(EXIT.OK);
  requestId = filed.json.id;
  expect((await quota(member, file)).code).toBe(EXIT.AUTH);
  const approved = await quota(platform, ['approve', requestId]);
  expect(approved.code, approved.err).toBe(EXIT.OK);
});
afterAll(async () => {
  await t?.close();
});

describe('fairway audit', () => {
  it("lists the quota request's records newest first for a tenant admin", async () => {
    const res = await cli(['--action', 'quotaRequest']);
    expect(res.code, res.err).toBe(EXIT.OK);
    const [header, ...rows] = res.out.split('\n');
    expect(header).toMatch(/^WHEN +WHO +ACTION +TARGET +OUTCOME$/);
    const target = `QuotaRequest ${escaped(requestId)}`;
    expect(rows[0]).toMatch(
      new RegExp(
        `^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ +Platform Admin \\(token\\) +quotaRequest.approve +${target} +SUCCESS$`,
      ),
    );
    expect(rows.at(-1)).toMatch(
      new RegExp(`Ada Admin \\(token\\) +quotaRequest.create +${target} +SUCCESS$`),
    );
    // The member's refused attempt is in the tenant's log too, with no target and its error code.
    expect(rows).toHaveLength(3);
    expect(rows[1]).toMatch(/Max Member \(token\) +quotaRequest\.create +- +DENIED FORBIDDEN$/);

    const json = await cli(['--action', 'QUOTAREQUEST', '--json']);
    expect(json.code, json.err).toBe(EXIT.OK);
    const events = JSON.parse(json.out) as { action: string; createdAt: string; targetId: string }[];
    expect(events).toHaveLength(3);
    expect(events[0]).toMatchObject({
      action: 'quotaRequest.approve',
      targetId: requestId,
      outcome: 'SUCCESS',
    });
    expect(events.map((e) => e.createdAt)).toEqual(
      events
        .map((e) => e.createdAt)
        .sort()
        .reverse(),
    );
  });

  it('a member exits 3; the platform log is for platform admins', async () => {
    const res = await cli([], { token: member });
    expect(res.code).toBe(EXIT.AUTH);
    expect(res.err).toMatch(/^fairway audit: .*\[FORBIDDEN\]$/);
    expect((await cli(['--platform'])).code).toBe(EXIT.AUTH);
    const all = await cli(['--platform', '--action', 'quotaRequest.approve', '--json'], { token: platform });
    expect(all.code, all.err).toBe(EXIT.OK);
    expect(JSON.parse(all.out)).toMatchObject([{ action: 'quotaRequest.approve', targetId: requestId }]);
  });

  it('--limit pages through the log; --action reads back until enough match', async () => {
    const em = systemEntityManager(t.app.orm).fork({ clear: true });
    const tenant = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    const bulk = (action: string, n: number) => {
      for (let i = 0; i < n; i++)
        em.create(AuditEvent, {
          tenant,
          actor: null,
          actorTokenId: null,
          action,
          targetType: null,
          targetId: null,
          input: {},
          outcome: 'SUCCESS',
          errorCode: null,
          requestId: `bulk-${i}`,
        });
    };
    bulk('test.older', 3);
    await em.flush();
    bulk('test.bulk', 230);
    await em.flush();

    const page = JSON.parse((await cli(['--limit', '150', '--json'])).out) as { action: string }[];
    expect(page).toHaveLength(150);
    expect(page.every((e) => e.action === 'test.bulk')).toBe(true);
    expect(JSON.parse((await cli(['--json'])).out)).toHaveLength(50);
    // Behind 230 newer events: three pages read back to find them.
    const older = await cli(['--action', 'test.older', '--limit', '2']);
    expect(older.code, older.err).toBe(EXIT.OK);
    expect(older.out.split('\n').slice(1)).toEqual([
      expect.stringMatching(/Z +- +test\.older +- +SUCCESS$/),
      expect.stringMatching(/Z +- +test\.older +- +SUCCESS$/),
    ]);
    const none = await cli(['--action', 'no.such.action']);
    expect(none).toMatchObject({
      code: EXIT.OK,
      out: "no audit events in aurora-research with an action containing 'no.such.action'",
    });
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
      [['--colour'], /Unknown option '--colour'/],
      [['--limit', '0'], /--limit must be a positive integer, got '0'/],
      [['--limit', 'all'], /--limit must be a positive integer/],
      [['--platform', '--tenant', 'aurora-research'], /--platform reads every tenant: not with --tenant/],
      [['--action', ' '], /--action must not be empty/],
      [['quotaRequest'], /unexpected argument 'quotaRequest'/],
    ])('%j', async (args, message) => {
      const res = await cli(args, { server: url });
      expect(res.code, res.err).toBe(EXIT.USAGE);
      expect(res.err).toMatch(message);
      expect(hits).toBe(0);
    });
  });
});
