// `fairway serve` and `fairway services` against a real gateway on a real port, run in-process
// through runTenantCommand with captured output, as test/cli/tenant.test.ts runs the job commands.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/tenant/context.js';
import { runTenantCommand } from '../../src/cli/tenant/index.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

let t: TestApp;
let work: string;
let bob: string;
let max: string;

interface Run {
  code: number;
  out: string;
  err: string;
}

/** One CLI run; the environment has the server and Bob's token (Borealis) unless `env` says otherwise. */
async function cli(args: string[], options: { env?: NodeJS.ProcessEnv; stdin?: string } = {}): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const [cmd, ...rest] = args;
  const code = await runTenantCommand(
    cmd!,
    rest,
    { out: (s) => out.push(s), err: (s) => err.push(s) },
    {
      env: {
        FAIRWAY_CONFIG_DIR: path.join(work, 'config'),
        FAIRWAY_SERVER: t.url,
        FAIRWAY_TOKEN: bob,
        ...options.env,
      },
      stdout: null,
      stdin: Readable.from(options.stdin === undefined ? [] : [options.stdin]),
    },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function serviceFile(name: string, body: string): string {
  const file = path.join(work, name);
  fs.writeFileSync(file, body);
  return file;
}

/** A Borealis service: one H100 a replica, 1 to 3 replicas on requests per second. */
const service = (o: { name?: string; image?: string; min?: number; max?: number; extra?: string } = {}) =>
  `name: ${o.name ?? 'chat'}
queue: borealis-serving
container:
  image: ${o.image ?? 'registry.borealis.example/chat:1'}
  args: [--port, "8080"]
  env:
    MODEL: llama-3-8b
port: 8080
replica:
  gpusPerPod: 1
  flavors: [h100-80g]
minReplicas: ${o.min ?? 1}
maxReplicas: ${o.max ?? 3}
scaling:
  signal: REQUESTS_PER_SECOND
  target: 10
  scaleDownStabilizationSeconds: 0
${o.extra ?? ''}`;

const READ = `query($id: ID!) { inferenceService(id: $id) {
  id name revision image minReplicas maxReplicas minimumWindows { days start end timeZone minReplicas }
  replica { gpusPerPod flavors } scaling { signal target scaleDownStabilizationSeconds }
} }`;

async function read(token: string, id: string) {
  return t.gql(token, READ, { id });
}

/** Rows of services and jobs: a refused serve writes neither. */
async function rows(): Promise<{ services: number; jobs: number }> {
  const table = (name: string) => t.app.orm.getMetadata().find(name)!.tableName;
  const [row] = await t.app.orm.em
    .getConnection()
    .execute<Record<string, number | string>[]>(
      `select (select count(*) from ${table('InferenceService')}) as "services", (select count(*) from ${table('Job')}) as "jobs"`,
    );
  return { services: Number(row!.services), jobs: Number(row!.jobs) };
}

let chatId: string;

beforeAll(async () => {
  t = await startTestApp();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-cli-services-'));
  bob = t.token('borealis-inference', 'MEMBER');
  max = t.token('aurora-research', 'MEMBER');
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe('a bad service file', () => {
  it.each([
    ['an unknown top-level key', service({ extra: 'gpus: 4\n' }), /bad\.yaml:18: gpus: unknown field/],
    [
      'an unknown key inside scaling',
      service({ extra: '  windup: 3\n' }),
      /bad\.yaml:18: scaling\.windup: unknown field/,
    ],
    ['a wrong type', service().replace('port: 8080', 'port: http'), /bad\.yaml:8: port: /],
    ['no scaling', service().replace(/scaling:[\s\S]*$/, ''), /bad\.yaml:1: scaling: /],
  ])('with %s exits 2 naming file:line, and sends nothing', async (_what, body, message) => {
    const before = await rows();
    const res = await cli(['serve', '-f', serviceFile('bad.yaml', body)]);
    expect(res.code, res.err).toBe(EXIT.USAGE);
    expect(res.err).toMatch(message);
    expect(await rows()).toEqual(before);
  });

  it('with minReplicas above maxReplicas is BAD_USER_INPUT from the server (exit 1), nothing written', async () => {
    const before = await rows();
    const res = await cli(['serve', '-f', serviceFile('bounds.yaml', service({ min: 4, max: 2 }))]);
    expect(res.code).toBe(EXIT.FAILURE);
    expect(res.err).toMatch(
      /^fairway serve: minReplicas \(4\) must not exceed maxReplicas \(2\)\. \[BAD_USER_INPUT\]$/,
    );
    expect(await rows()).toEqual(before);
    // the dry run refuses it the same way
    const dry = await cli([
      'serve',
      '-f',
      serviceFile('bounds.yaml', service({ min: 4, max: 2 })),
      '--dry-run',
    ]);
    expect(dry.code).toBe(EXIT.FAILURE);
    expect(dry.err).toMatch(/\[BAD_USER_INPUT\]/);
  });
});

describe('serve', () => {
  it('--dry-run previews the replicas and changes nothing', async () => {
    const before = await rows();
    const res = await cli(['serve', '-f', serviceFile('chat.yaml', service()), '--dry-run']);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(
      /^dry run: would create service chat in borealis-inference; nothing was changed$/m,
    );
    expect(res.out).toMatch(/^3 replicas: would fit now$/m);
    expect(res.out).toMatch(/^ {2}guaranteed \(inference-critical\): fits now/m);
    expect(res.out).toMatch(/^ {2}burst \(production\): fits now/m);
    const json = await cli([
      'serve',
      '-f',
      serviceFile('chat.yaml', service()),
      '--dry-run',
      '--replicas',
      '1',
      '--json',
    ]);
    expect(json.code, json.err).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({
      action: 'create',
      service: null,
      preview: { replicas: 1, admissible: true, guaranteed: { admissible: true }, burst: null },
    });
    expect(await rows()).toEqual(before);
  });

  it("docs/cli.md's example file is one the server takes (a dry run from standard input)", async () => {
    const example = fs.readFileSync('docs/cli.md', 'utf8').split('```yaml\n')[1]!.split('```')[0]!;
    const res = await cli(['serve', '-f', '-', '--dry-run', '--json'], { stdin: example });
    expect(res.code, res.err).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ action: 'create', preview: { replicas: 6 } });
    // without a login nothing is read from the server
    const anonymous = await cli(['serve', '-f', '-'], { stdin: example, env: { FAIRWAY_TOKEN: '' } });
    expect(anonymous.code).toBe(EXIT.AUTH);
    expect(anonymous.err).toMatch(/not logged in/);
  });

  it('creates the service: its id, state and what the file said', async () => {
    const res = await cli(['serve', '-f', serviceFile('chat.yaml', service())]);
    expect(res.code, res.err).toBe(0);
    const [first, second] = res.out.split('\n');
    expect(first).toMatch(/^service (\S+) {2}chat {2}queue borealis-serving {2}revision 1: created$/);
    expect(second).toMatch(
      /^(READY|ROLLING|STARTING|WAITING) {2}replicas: 1 desired, \d admitted, \d ready, \d pending \(1 guaranteed\); bounds 1-3; 1 GPU a replica$/,
    );
    chatId = first!.split(' ')[1]!;
    const stored = await read(bob, chatId);
    expect(stored.body.data?.inferenceService).toMatchObject({
      name: 'chat',
      revision: 1,
      image: 'registry.borealis.example/chat:1',
      minReplicas: 1,
      maxReplicas: 3,
      replica: { gpusPerPod: 1, flavors: ['h100-80g'] },
      scaling: { signal: 'REQUESTS_PER_SECOND', target: 10, scaleDownStabilizationSeconds: 0 },
    });
  });

  it('the same file again updates it without a roll; a new image rolls it (revision 2)', async () => {
    const same = await cli(['serve', '-f', serviceFile('chat.yaml', service())]);
    expect(same.code, same.err).toBe(0);
    expect(same.out).toMatch(/revision 1: updated \(what the replicas run is unchanged: no roll\)/);
    const rolled = await cli([
      'serve',
      '-f',
      serviceFile('chat.yaml', service({ image: 'registry.borealis.example/chat:2' })),
      '--json',
    ]);
    expect(rolled.code, rolled.err).toBe(0);
    expect(JSON.parse(rolled.out)).toMatchObject({
      id: chatId,
      name: 'chat',
      revision: 2,
      action: 'updated',
    });
    expect((await read(bob, chatId)).body.data?.inferenceService).toMatchObject({
      revision: 2,
      image: 'registry.borealis.example/chat:2',
    });
  });

  it('a file with day minimums (minimumWindows) updates them; the dry run of an existing service says update', async () => {
    const windows =
      'minimumWindows:\n  - { days: [1, 2, 3, 4, 5], start: "08:00", end: "20:00", timeZone: Europe/Berlin, minReplicas: 1 }\n';
    const file = serviceFile(
      'chat.yaml',
      service({ image: 'registry.borealis.example/chat:2', extra: windows }),
    );
    const dry = await cli(['serve', '-f', file, '--dry-run', '--replicas', '2']);
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toMatch(
      new RegExp(`^dry run: would update service ${chatId} {2}chat \\(revision 2\\)`, 'm'),
    );
    const res = await cli(['serve', '-f', file]);
    expect(res.code, res.err).toBe(0);
    expect((await read(bob, chatId)).body.data?.inferenceService).toMatchObject({
      revision: 2,
      minimumWindows: [
        { days: [1, 2, 3, 4, 5], start: '08:00', end: '20:00', timeZone: 'Europe/Berlin', minReplicas: 1 },
      ],
    });
  });

  it('bounds the server refuses leave an existing service as it was; a class it cannot change is a CONFLICT', async () => {
    const bad = await cli([
      'serve',
      '-f',
      serviceFile('chat.yaml', service({ image: 'registry.borealis.example/chat:3', min: 3, max: 1 })),
    ]);
    expect(bad.code).toBe(EXIT.FAILURE);
    expect(bad.err).toMatch(/\[BAD_USER_INPUT\]/);
    expect((await read(bob, chatId)).body.data?.inferenceService).toMatchObject({
      revision: 2,
      image: 'registry.borealis.example/chat:2',
      minReplicas: 1,
      maxReplicas: 3,
    });
    const before = await rows();
    const conflict = await cli([
      'serve',
      '-f',
      serviceFile('chat.yaml', service({ extra: 'burstClass: batch\n' })),
    ]);
    expect(conflict.code, conflict.err).toBe(EXIT.CONFLICT);
    expect(conflict.err).toMatch(/burstClass 'production' \(the file: 'batch'\)/);
    expect(await rows()).toEqual(before);
  });
});

describe('services', () => {
  it('ls shows the service as a table and as JSON', async () => {
    const table = await cli(['services', 'ls']);
    expect(table.code, table.err).toBe(0);
    const [header, ...lines] = table.out.split('\n');
    expect(header).toMatch(/^NAME\s+QUEUE\s+REPLICAS D\/A\/R\s+MIN-MAX\s+SIGNAL\s+STATE$/);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^chat\s+borealis-serving\s+\d\/\d\/\d\s+1-3\s+req\/s \S+ \(10\/replica\)\s+(READY|ROLLING|STARTING|WAITING)$/,
      ),
    );
    const json = await cli(['services', 'ls', '--json']);
    expect(json.code, json.err).toBe(0);
    expect(JSON.parse(json.out)).toContainEqual(
      expect.objectContaining({
        id: chatId,
        name: 'chat',
        revision: 2,
        queue: expect.objectContaining({ name: 'borealis-serving' }),
      }),
    );
  });

  it('scale changes the bounds; without --min/--max it is a usage error', async () => {
    const res = await cli(['services', 'scale', 'chat', '--min', '2', '--max', '5']);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toMatch(/^service \S+ {2}chat: bounds 2-5$/m);
    expect((await read(bob, chatId)).body.data?.inferenceService).toMatchObject({
      minReplicas: 2,
      maxReplicas: 5,
    });
    expect((await cli(['services', 'scale', 'chat'])).code).toBe(EXIT.USAGE);
    expect((await cli(['services', 'scale', 'chat', '--max', 'lots'])).code).toBe(EXIT.USAGE);
    expect((await cli(['services', 'ls', '--min', '1'])).code).toBe(EXIT.USAGE);
    expect((await cli(['services', 'restart', 'chat'])).code).toBe(EXIT.USAGE);
    const refused = await cli(['services', 'scale', 'chat', '--min', '6']);
    expect(refused.code).toBe(EXIT.FAILURE);
    expect(refused.err).toMatch(/\[BAD_USER_INPUT\]/);
  });

  it("another tenant's token neither sees nor scales nor deletes it (NOT_FOUND)", async () => {
    const env = { FAIRWAY_TOKEN: max };
    const ls = await cli(['services', 'ls', '--json'], { env });
    expect(ls.code, ls.err).toBe(0);
    expect(JSON.parse(ls.out).map((s: { id: string }) => s.id)).not.toContain(chatId);
    const byName = await cli(['services', 'delete', 'chat'], { env });
    expect(byName.code).toBe(EXIT.NOT_FOUND);
    expect(byName.err).toBe(`fairway services: no service 'chat' in aurora-research`);
    const byId = await cli(['services', 'delete', chatId], { env });
    expect(byId.code).toBe(EXIT.NOT_FOUND);
    expect(byId.err).toMatch(/\[NOT_FOUND\]$/);
    expect((await cli(['services', 'scale', chatId, '--max', '9'], { env })).code).toBe(EXIT.NOT_FOUND);
    expect(
      (await cli(['services', 'ls'], { env: { ...env, FAIRWAY_TENANT: 'borealis-inference' } })).code,
    ).toBe(EXIT.NOT_FOUND);
    expect((await read(max, chatId)).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await read(bob, chatId)).body.data?.inferenceService).toMatchObject({ maxReplicas: 5 });
  });

  it('delete removes it, asking nothing; deleting it again is NOT_FOUND (exit 4)', async () => {
    const res = await cli(['services', 'delete', 'chat']);
    expect(res.code, res.err).toBe(0);
    expect(res.out).toBe(`service ${chatId}  chat: deleted (its replicas are cancelled)`);
    expect((await read(bob, chatId)).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await cli(['services', 'ls'])).out).toBe('no inference services in borealis-inference');
    const again = await cli(['services', 'delete', 'chat']);
    expect(again.code).toBe(EXIT.NOT_FOUND);
    expect((await cli(['services', 'delete', chatId])).err).toMatch(/\[NOT_FOUND\]$/);
  });

  it('--help exits 0 for serve and services', async () => {
    expect(await cli(['serve', '--help'])).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^usage: fairway serve -f FILE/),
    });
    expect(await cli(['services', '--help'])).toMatchObject({
      code: 0,
      out: expect.stringMatching(/^usage: fairway services ls/),
    });
    expect((await cli(['services'])).code).toBe(EXIT.USAGE);
    expect((await cli(['serve'])).code).toBe(EXIT.USAGE);
  });
});
