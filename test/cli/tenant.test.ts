// The tenant CLI against a real gateway on a real port (HTTP and graphql-ws), run in-process
// through runTenantCommand with captured output, and once as a child process (bin/fairway.js).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMyJobs } from '../../examples/typed-client/list-jobs.js';
import { EXIT, exitCodeFor } from '../../src/cli/tenant/context.js';
import { runTenantCommand } from '../../src/cli/tenant/index.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';

let t: TestApp;
let work: string;
let member: string;

interface Run {
  code: number;
  out: string;
  err: string;
}

/** One CLI run; the environment has the server and a member's token unless `env` says otherwise. */
async function cli(
  args: string[],
  options: {
    env?: NodeJS.ProcessEnv;
    stdin?: string;
    signal?: AbortSignal;
    onOut?: (line: string) => void;
  } = {},
): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const [cmd, ...rest] = args;
  const code = await runTenantCommand(
    cmd!,
    rest,
    { out: (s) => (out.push(s), options.onOut?.(s)), err: (s) => err.push(s) },
    {
      env: {
        FAIRWAY_CONFIG_DIR: path.join(work, 'config'),
        FAIRWAY_SERVER: t.url,
        FAIRWAY_TOKEN: member,
        ...options.env,
      },
      stdout: null,
      stdin: Readable.from(options.stdin === undefined ? [] : [options.stdin]),
      ...(options.signal ? { signal: options.signal } : {}),
    },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

function jobFile(name: string, body: string): string {
  const file = path.join(work, name);
  fs.writeFileSync(file, body);
  return file;
}

const shortJob = (name: string, extra = '') =>
  `name: ${name}\nqueue: aurora-training\nexpectedDurationSeconds: 200\npodSets:\n  - gpusPerPod: 1\n${extra}`;
// 36000 declared seconds at the tests' time scale (1000×): 36 s of real time, longer than any test here.
const longJob = (name: string) =>
  `name: ${name}\nexpectedDurationSeconds: 36000\npodSets:\n  - gpusPerPod: 1\n`;

async function jobCount(): Promise<number> {
  return (await t.rowCounts({ ignoreAudit: true })).Job!;
}

beforeAll(async () => {
  t = await startTestApp();
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-cli-'));
  member = t.token('aurora-research', 'MEMBER');
});
afterAll(async () => {
  await t?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe('login, whoami, logout', () => {
  it('checks the token, stores it 0600 in a 0700 directory, and later commands use it', async () => {
    const dir = path.join(work, 'login-home');
    const env = { FAIRWAY_CONFIG_DIR: dir, FAIRWAY_SERVER: '', FAIRWAY_TOKEN: '' };
    const login = await cli(['login', '--server', t.url.replace('/graphql', ''), '--token-stdin'], {
      env,
      stdin: `${member}\n`,
    });
    expect(login, login.err).toMatchObject({ code: 0 });
    expect(login.out).toContain('Max Member');
    expect(login.out).toContain('MEMBER in aurora-research');
    const file = path.join(dir, 'credentials.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ server: t.url, token: member });

    const who = await cli(['whoami', '--json'], { env });
    expect(who.code, who.err).toBe(0);
    expect(JSON.parse(who.out).viewer.email).toBe('max@aurora.example');

    expect((await cli(['logout'], { env })).code).toBe(0);
    expect(fs.existsSync(file)).toBe(false);
    const after = await cli(['whoami'], { env });
    expect(after.code).toBe(EXIT.AUTH);
    expect(after.err).toMatch(/not logged in/);
  });

  it('refuses a bad token with exit 3 and stores nothing', async () => {
    const dir = path.join(work, 'bad-login');
    const res = await cli(['login', '--server', t.url, '--token', 'fw_not-a-real-token'], {
      env: { FAIRWAY_CONFIG_DIR: dir },
    });
    expect(res.code).toBe(EXIT.AUTH);
    expect(res.err).toMatch(/UNAUTHENTICATED/);
    expect(fs.existsSync(path.join(dir, 'credentials.json'))).toBe(false);
  });
});

describe('submit', () => {
  it('submits examples/job.yaml; the same file again returns the same job, not a second one', async () => {
    const before = await jobCount();
    const first = await cli(['submit', '-f', 'examples/job.yaml', '--json']);
    expect(first.code, first.err).toBe(0);
    const job = JSON.parse(first.out);
    const stored = await t.gql(
      member,
      `query($id: ID!) { node(id: $id) { ... on Job { name queue { name } podSets { count gpusPerPod } container { image env { name } } } } }`,
      { id: job.id },
    );
    expect(stored.body.data?.node).toMatchObject({
      name: 'llama-ft-demo',
      queue: { name: 'aurora-training' },
      podSets: [{ count: 1, gpusPerPod: 2 }],
      container: { image: 'nvcr.io/nvidia/pytorch:24.01-py3', env: [{ name: 'EPOCHS' }] },
    });
    const again = await cli(['submit', '-f', 'examples/job.yaml']);
    expect(again.code, again.err).toBe(0);
    expect(again.out).toContain(`job ${job.id}`);
    expect(await jobCount()).toBe(before + 1);
  });

  it.each([
    ['broken YAML', 'name: x\npodSets:\n  - gpusPerPod: 1\n   count: [\n', /bad\.yaml:4: /],
    [
      'a wrong type',
      'name: x\npodSets:\n  - count: 1\n    gpusPerPod: two\n',
      /bad\.yaml:4: podSets\[0\]\.gpusPerPod: /,
    ],
    [
      'an unknown field',
      'name: x\npodSets:\n  - gpusPerPod: 1\ngpus: 4\n',
      /bad\.yaml:4: gpus: unknown field/,
    ],
    ['no pod sets', 'name: x\n', /bad\.yaml:1: podSets: /],
  ])('a file with %s exits 2 naming file:line, and sends nothing', async (_what, body, message) => {
    const before = await jobCount();
    const res = await cli(['submit', '-f', jobFile('bad.yaml', body)]);
    expect(res.code).toBe(EXIT.USAGE);
    expect(res.err).toMatch(message);
    expect(await jobCount()).toBe(before);
  });

  it('the same explicit key with another file is a CONFLICT (5); a viewer is FORBIDDEN (3)', async () => {
    expect(
      (await cli(['submit', '-f', jobFile('a.yaml', longJob('conflict-a')), '--idempotency-key', 'k-1']))
        .code,
    ).toBe(0);
    const conflict = await cli([
      'submit',
      '-f',
      jobFile('b.yaml', longJob('conflict-b')),
      '--idempotency-key',
      'k-1',
    ]);
    expect(conflict.code, conflict.err).toBe(EXIT.CONFLICT);
    const viewer = await cli(['submit', '-f', jobFile('c.yaml', longJob('by-viewer'))], {
      env: { FAIRWAY_TOKEN: t.token('aurora-research', 'VIEWER') },
    });
    expect(viewer.code, viewer.err).toBe(EXIT.AUTH);
    expect(viewer.err).toMatch(/FORBIDDEN/);
  });
});

describe('ls, watch, cancel, usage', () => {
  it('ls --json lists a submitted job; the table has its columns', async () => {
    const { id } = JSON.parse(
      (await cli(['submit', '-f', jobFile('ls.yaml', longJob('listed-job')), '--json'])).out,
    );
    const ls = await cli(['ls', '--json', '--limit', '50']);
    expect(ls.code, ls.err).toBe(0);
    expect(JSON.parse(ls.out).map((j: { id: string }) => j.id)).toContain(id);
    const table = await cli(['ls', '--state', 'pending,running,admitted', '--queue', 'aurora-training']);
    expect(table.out.split('\n')[0]).toMatch(/^ID\s+NAME\s+STATE\s+QUEUE\s+POSITION\s+GPUS\s+AGE$/);
    expect(table.out).toContain('listed-job');
    expect((await cli(['ls', '--state', 'DONE'])).code).toBe(EXIT.USAGE);
    // The typed-client example (type-checked through this import) reads the same list.
    expect(await listMyJobs(t.url, member, 50)).toContainEqual(
      expect.stringMatching(/^(PENDING|ADMITTED|RUNNING) +listed-job \(aurora-training\)/),
    );
  });

  it('watch follows a short job over graphql-ws to SUCCEEDED and exits 0', async () => {
    const { id } = JSON.parse(
      (await cli(['submit', '-f', jobFile('short.yaml', shortJob('short-job')), '--json'])).out,
    );
    const watch = await cli(['watch', id]);
    expect(watch.code, watch.err).toBe(0);
    const lines = watch.out.split('\n');
    expect(lines.at(-1)).toMatch(/^short-job {2}SUCCEEDED/);
    expect(new Set(lines).size).toBe(lines.length); // one line per change
  });

  it('watch --json exits 1 when the job fails', async () => {
    const { id } = JSON.parse(
      (
        await cli([
          'submit',
          '-f',
          jobFile('fail.yaml', shortJob('failing-job', 'simulate:\n  fail: true\n')),
          '--json',
        ])
      ).out,
    );
    const watch = await cli(['watch', id, '--json']);
    expect(watch.code, watch.err).toBe(EXIT.FAILURE);
    expect(JSON.parse(watch.out.split('\n').at(-1)!)).toMatchObject({ id, state: 'FAILED' });
  });

  it('cancel → CANCELLED, and a watch of that job exits 1', async () => {
    const { id } = JSON.parse(
      (await cli(['submit', '-f', jobFile('cancel.yaml', longJob('to-cancel')), '--json'])).out,
    );
    let firstLine!: () => void;
    const watching = new Promise<void>((resolve) => (firstLine = resolve));
    const watch = cli(['watch', id], { onOut: () => firstLine() });
    await watching; // the watch is live before the cancel
    const cancel = await cli(['cancel', id]);
    expect(cancel.code, cancel.err).toBe(0);
    expect(cancel.out).toMatch(/to-cancel: CANCELLED/);
    const watched = await watch;
    expect(watched.code).toBe(EXIT.FAILURE);
    expect(watched.out.split('\n').at(-1)).toMatch(/CANCELLED/);
  });

  it('usage: a tenant admin gets GPU-hours and cost grouped; a member no cost column', async () => {
    const admin = await cli(['usage', '--group-by', 'project,user', '--from', '2026-01-01'], {
      env: { FAIRWAY_TOKEN: t.token('aurora-research', 'TENANT_ADMIN') },
    });
    expect(admin.code, admin.err).toBe(0);
    expect(admin.out).toMatch(/PERIOD\s+PROJECT\s+USER\s+GPU-HOURS\s+CPU-HOURS\s+JOBS\s+COST \(\w+\)/);
    const mine = await cli(['usage']);
    expect(mine.code, mine.err).toBe(0);
    expect(mine.out).toContain('GPU-HOURS');
    expect(mine.out).not.toContain('COST');
    expect((await cli(['usage', '--group-by', 'planet'])).code).toBe(EXIT.USAGE);
  });
});

describe('errors', () => {
  it('maps each error code to its exit status', () => {
    const codes = [
      'UNAUTHENTICATED',
      'FORBIDDEN',
      'NOT_FOUND',
      'CONFLICT',
      'RATE_LIMITED',
      'SERVICE_UNAVAILABLE',
      'BAD_USER_INPUT',
      undefined,
    ];
    expect(codes.map(exitCodeFor)).toEqual([3, 3, 4, 5, 6, 7, 1, 1]);
  });

  it('an unreachable server exits 7 with one readable line', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as net.AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const res = await cli(['ls'], { env: { FAIRWAY_SERVER: `http://127.0.0.1:${port}` } });
    expect(res.code).toBe(EXIT.UNREACHABLE);
    expect(res.err).toBe(`fairway ls: cannot reach http://127.0.0.1:${port}/graphql (ECONNREFUSED)`);
  });

  it('an unknown token exits 3, an unknown job 4, a bad flag 2; --help exits 0', async () => {
    expect((await cli(['ls'], { env: { FAIRWAY_TOKEN: 'fw_nope' } })).code).toBe(EXIT.AUTH);
    const missing = await cli([
      'watch',
      Buffer.from('Job:00000000-0000-4000-8000-000000000000').toString('base64'),
    ]);
    expect(missing.code, missing.err).toBe(EXIT.NOT_FOUND);
    expect((await cli(['ls', '--colour'])).code).toBe(EXIT.USAGE);
    // apply's own parser does not know --server/--token: the dispatcher takes them out of its argv
    const apply = await cli([
      'apply',
      '--server',
      t.url,
      '--token',
      member,
      '-f',
      path.join(work, 'missing.yaml'),
      '--check',
    ]);
    expect(apply.err).not.toMatch(/unknown option/i);
    expect(apply.err).toMatch(/missing\.yaml/);
    const help = await cli(['submit', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^usage: fairway submit -f FILE/);
  });
});

describe('as a program', () => {
  it('node bin/fairway.js watch prints a line per change and Ctrl-C exits 130', async () => {
    const { id } = JSON.parse(
      (await cli(['submit', '-f', jobFile('sigint.yaml', longJob('interrupted-watch')), '--json'])).out,
    );
    const child = spawn(process.execPath, ['bin/fairway.js', 'watch', id], {
      env: {
        ...process.env,
        FAIRWAY_CONFIG_DIR: path.join(work, 'none'),
        FAIRWAY_SERVER: t.url,
        FAIRWAY_TOKEN: member,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await new Promise<void>((resolve) =>
      child.stdout.on('data', (d) => {
        stdout += d;
        if (stdout.includes('\n')) resolve();
      }),
    );
    expect(stdout).toMatch(/^interrupted-watch {2}(PENDING|ADMITTED|RUNNING)/);
    child.kill('SIGINT');
    expect(await exited, stderr).toBe(130);
    expect(stderr).toBe('interrupted\n');
  });
});
