// `fairway apply` against real servers on real ports: an empty platform with only a platform
// admin (everything created from examples/platform.yaml), and the seeded demo (which the
// example mirrors). The CLI talks HTTP through its own CliContext (test/helpers/apply-cli.ts).
// --prune and the updates of flavors, cohorts and node pools: apply-prune.test.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/tenant/context.js';
import {
  type ApplyRun,
  runApplyCli,
  startEmptyPlatform,
  writeSpec as writeSpecIn,
} from '../helpers/apply-cli.js';
import { expectOk, startTestApp, type TestApp } from '../helpers/harness.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-apply-'));
const EXAMPLE = path.resolve('examples/platform.yaml');

const apply = (url: string, token: string | undefined, args: string[], stdin?: string): Promise<ApplyRun> =>
  runApplyCli(url, token, args, tmp, stdin);
const writeSpec = (name: string, text: string): string => writeSpecIn(tmp, name, text);

/** The example with one queue's H100 nominal quota changed. */
function exampleWithAuroraH100(nominal: number): string {
  const text = fs.readFileSync(EXAMPLE, 'utf8');
  const changed = text.replace(
    '- { flavor: h100-80g, nominal: 16 }',
    `- { flavor: h100-80g, nominal: ${nominal} }`,
  );
  expect(changed).not.toBe(text);
  return writeSpec(`example-${nominal}.yaml`, changed);
}

const PLATFORM_READ = `{
  flavors { name kind gpuModel slicesPerGpu }
  priceBook { flavorPrices { flavor pricePerUnitHour current } }
  cohorts { name parentName }
  nodePools { name nodes { name flavor gpus } }
  queues { name cohortName weight isolationLevel tenant { slug } quotas { flavor resource nominal borrowingLimit lendingLimit } }
  tenants(first: 50) { edges { node { slug name tier isolationLevel grantedPriorityClasses dataBoundaries { imageRegistries datasetLocations artifactStores } } } }
}`;

describe('fairway apply', () => {
  let empty: TestApp; // no demo: a platform admin only
  let adminToken: string;
  let demo: TestApp;

  beforeAll(async () => {
    let platform: Awaited<ReturnType<typeof startEmptyPlatform>>;
    [platform, demo] = await Promise.all([startEmptyPlatform(), startTestApp()]);
    empty = platform.app;
    adminToken = platform.adminToken;
  });
  afterAll(async () => {
    await Promise.all([empty?.close(), demo?.close()]);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('creates the example platform on an empty server; a second run shows no change and sends no mutation', async () => {
    const check = await apply(empty.url, adminToken, ['-f', EXAMPLE, '--check']);
    expect(check.code, check.err.join('\n')).toBe(EXIT.DIFF);
    expect(check.mutations).toBe(0);
    expect(check.out).toContain('    quotas[h100-80g/GPU]: {"nominal":16}');
    expect(check.out.at(-1)).toMatch(/8 to create, 0 to update, 4 unchanged\.$/); // the priority classes exist from the start

    const first = await apply(empty.url, adminToken, ['-f', EXAMPLE]);
    expect(first.code, first.err.join('\n')).toBe(EXIT.OK);
    expect(first.out).toContain('created queue aurora-training');
    expect(first.out.at(-1)).toBe('Applied: 8 created, 0 updated.');

    const data = await expectOk(empty, adminToken, PLATFORM_READ);
    expect(data.flavors).toHaveLength(2);
    expect(data.flavors).toEqual(
      expect.arrayContaining([
        { name: 'h100-80g', kind: 'GPU', gpuModel: 'NVIDIA H100 80GB', slicesPerGpu: null },
        { name: 'a100-1g.10gb', kind: 'MIG', gpuModel: 'NVIDIA A100 40GB (MIG 1g.10gb)', slicesPerGpu: 7 },
      ]),
    );
    expect(data.cohorts).toEqual([{ name: 'research-pool', parentName: null }]);
    expect(data.nodePools[0].nodes).toHaveLength(6);
    const aurora = data.queues.find((q: { name: string }) => q.name === 'aurora-training');
    expect(aurora).toMatchObject({
      cohortName: 'research-pool',
      weight: 1,
      isolationLevel: 'GUARANTEED',
      tenant: { slug: 'aurora-research' },
    });
    expect(aurora.quotas).toEqual(
      expect.arrayContaining([
        { flavor: 'h100-80g', resource: 'GPU', nominal: 16, borrowingLimit: null, lendingLimit: null },
        { flavor: 'a100-1g.10gb', resource: 'GPU', nominal: 56, borrowingLimit: null, lendingLimit: null },
      ]),
    );
    const tenants = data.tenants.edges.map((e: { node: unknown }) => e.node);
    expect(tenants).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          slug: 'borealis-inference',
          tier: 'ENTERPRISE',
          isolationLevel: 'ELASTIC',
          grantedPriorityClasses: ['inference-critical'],
        }),
        expect.objectContaining({
          slug: 'aurora-research',
          dataBoundaries: {
            imageRegistries: ['nvcr.io/nvidia', 'registry.aurora.example'],
            datasetLocations: ['s3://aurora-datasets'],
            artifactStores: ['s3://aurora-models'],
          },
        }),
      ]),
    );

    const again = await apply(empty.url, adminToken, ['-f', EXAMPLE]);
    expect(again.code, again.err.join('\n')).toBe(EXIT.OK);
    expect(again.mutations).toBe(0);
    expect(again.out).toContain('Nothing to do.');
    expect(again.out.join('\n')).not.toMatch(/^[+~!] /m);
    expect((await apply(empty.url, adminToken, ['-f', EXAMPLE, '--check'])).code).toBe(EXIT.OK);
  });

  it('a changed quota: the diff shows exactly that field, --check changes nothing, apply updates it', async () => {
    await apply(empty.url, adminToken, ['-f', EXAMPLE]);
    const file = exampleWithAuroraH100(24);
    const check = await apply(empty.url, adminToken, ['-f', file, '--check', '--json']);
    expect(check.code).toBe(EXIT.DIFF);
    expect(check.mutations).toBe(0);
    const plan = JSON.parse(check.out.join('\n'));
    const changed = plan.objects.filter((o: { action: string }) => o.action !== 'unchanged');
    expect(changed).toEqual([
      {
        kind: 'queue',
        name: 'aurora-training',
        action: 'update',
        changes: [{ field: 'quotas[h100-80g/GPU].nominal', old: 16, new: 24 }],
        notes: [],
        notCompared: ['preemption'],
      },
    ]);

    const human = await apply(empty.url, adminToken, ['-f', file, '--dry-run']);
    expect(human.out).toContain('    quotas[h100-80g/GPU].nominal: 16 → 24');

    const done = await apply(empty.url, adminToken, ['-f', file]);
    expect(done.code, done.err.join('\n')).toBe(EXIT.OK);
    expect(done.mutations).toBe(1);
    expect(done.out).toContain('updated queue aurora-training');
    const { queues } = await expectOk(empty, adminToken, '{ queues { name quotas { flavor nominal } } }');
    expect(queues.find((q: { name: string }) => q.name === 'aurora-training').quotas).toEqual(
      expect.arrayContaining([
        { flavor: 'h100-80g', nominal: 24 },
        { flavor: 'a100-1g.10gb', nominal: 56 },
      ]),
    );
    expect((await apply(empty.url, adminToken, ['-f', file, '--check'])).code).toBe(EXIT.OK);
    // Back to the example for the other cases.
    expect((await apply(empty.url, adminToken, ['-f', EXAMPLE])).mutations).toBe(1);
  });

  it('a flavor price change is a new price-book version; a kind change of a flavor in use blocks everything (exit 5, nothing sent)', async () => {
    await apply(empty.url, adminToken, ['-f', EXAMPLE]);
    const text = fs.readFileSync(EXAMPLE, 'utf8');
    const priced = writeSpec('priced.yaml', text.replace('pricePerUnitHour: 2.49', 'pricePerUnitHour: 2.99'));
    const run = await apply(empty.url, adminToken, ['-f', priced]);
    expect(run.code, run.err.join('\n')).toBe(EXIT.OK);
    expect(run.out).toContain('    pricePerUnitHour: 2.49 → 2.99');
    expect(run.mutations).toBe(1);
    expect((await apply(empty.url, adminToken, ['-f', priced, '--check'])).code).toBe(EXIT.OK);

    const kind = writeSpec(
      'kind.yaml',
      text
        .replace('pricePerUnitHour: 2.49', 'pricePerUnitHour: 3.49')
        .replace('kind: GPU ', 'kind: TIMESLICE '),
    );
    const blocked = await apply(empty.url, adminToken, ['-f', kind]);
    expect(blocked.code).toBe(EXIT.CONFLICT);
    expect(blocked.mutations).toBe(0);
    expect(blocked.out.join('\n')).toMatch(
      /! flavor h100-80g\n {4}kind: GPU → TIMESLICE\n {4}pricePerUnitHour: 2.99 → 3.49\n {4}cannot apply: kind cannot be changed while node pool shared, queue aurora-training, queue borealis-serving use\(s\) the flavor/,
    );
  });

  it('a refusal midway names the object and its typed error; running again completes the rest', async () => {
    const broken = `
tenants:
  - slug: cyan-labs
    name: Cyan Labs
    grantedPriorityClasses: [inference-critical]
    egressAllowlist: [10.20.0.7, "2001:DB8::/32"]   # read back canonical: 10.20.0.7/32, 2001:db8::/32
    queues:
      - name: cyan-batch
        quotas: [{ flavor: l40s-48g, nominal: 4 }]
`;
    const run = await apply(empty.url, adminToken, ['-f', writeSpec('broken.yaml', broken)]);
    // BAD_USER_INPUT has no exit code of its own: FAILURE.
    expect(run.code).toBe(EXIT.FAILURE);
    expect(run.out).toContain('created tenant cyan-labs');
    expect(run.err[0]).toMatch(/^fairway apply: queue cyan-batch failed: .*l40s-48g.* \[BAD_USER_INPUT\]$/);
    expect(run.err[1]).toMatch(/1 of 2 change\(s\) applied/);
    const { tenant } = await expectOk(
      empty,
      adminToken,
      '{ tenant(slug: "cyan-labs") { grantedPriorityClasses egressAllowlist queues { name } } }',
    );
    expect(tenant).toEqual({
      grantedPriorityClasses: ['inference-critical'],
      egressAllowlist: ['10.20.0.7/32', '2001:db8::/32'],
      queues: [],
    });

    const fixed = `flavors:\n  - { name: l40s-48g, kind: GPU, pricePerUnitHour: 1.2 }\n${broken}`;
    const rerun = await apply(empty.url, adminToken, ['-f', writeSpec('fixed.yaml', fixed)]);
    expect(rerun.code, rerun.err.join('\n')).toBe(EXIT.OK);
    expect(rerun.out).toEqual(
      expect.arrayContaining(['created flavor l40s-48g', 'created queue cyan-batch']),
    );
    expect(rerun.out).not.toContain('created tenant cyan-labs');
    expect(rerun.mutations).toBe(2);
    // Objects of the example are on the server but not in this file: reported, left alone.
    expect(rerun.out).toContain('not managed (on the server, not in the file; left as they are):');
    expect(rerun.out).toContain('    queue aurora-training');
  });

  it('a bad file exits 2 with file:line and sends nothing', async () => {
    const cases: [string, RegExp][] = [
      [
        'flavors:\n  - name: h100-80g\n    kind: GPU\n    pricePerUnitHour: 2.49\n    colour: green\n',
        /bad-1\.yaml:5: flavors\.0: unknown field "colour"/,
      ],
      ['tenants:\n  - slug: x\n    name: [unclosed\n', /bad-2\.yaml:\d+: /],
      [
        'cohorts:\n  - name: a\n\n  - name: b\n    quotas:\n      - { flavor: h100-80g, nominal: -1 }\n',
        /bad-3\.yaml:6: cohorts\.1\.quotas\.0\.nominal: must not be negative/,
      ],
      [
        'tenants:\n  - slug: a\n    name: A\n    queues: [{ name: q, quotas: [] }]\n  - slug: b\n    name: B\n    queues: [{ name: q, quotas: [] }]\n',
        /bad-4\.yaml:7: tenants\.1\.queues\.0\.name: queue "q" is declared twice/,
      ],
    ];
    const fromStdin = await apply(
      empty.url,
      adminToken,
      ['-f', '-'],
      'cohorts:\n  - name: a\n    parentId: b\n',
    );
    expect(fromStdin.code).toBe(EXIT.USAGE);
    expect(fromStdin.err.join('\n')).toMatch(/^<stdin>:3: cohorts\.0: unknown field "parentId"$/);
    expect(fromStdin.requests).toBe(0);
    for (const [i, [text, message]] of cases.entries()) {
      const before = await empty.rowCounts();
      const run = await apply(empty.url, adminToken, ['-f', writeSpec(`bad-${i + 1}.yaml`, text)]);
      expect(run.code).toBe(EXIT.USAGE);
      expect(run.err.join('\n')).toMatch(message);
      expect(run.requests).toBe(0);
      expect(await empty.rowCounts()).toEqual(before);
    }
  });

  it('the example mirrors the seeded demo: nothing to do there', async () => {
    const run = await apply(demo.url, demo.token(null, 'PLATFORM_ADMIN'), ['-f', EXAMPLE, '--check']);
    expect(run.code, run.out.join('\n')).toBe(EXIT.OK);
    expect(run.out).toContain(`${EXAMPLE}: 0 to create, 0 to update, 12 unchanged.`);
    expect(run.out).not.toContain('not managed (on the server, not in the file; left as they are):');
  });

  it('a tenant admin (or anyone not a platform admin) exits 3 and changes nothing', async () => {
    const file = writeSpec('cyan.yaml', 'tenants:\n  - { slug: cyan-labs, name: Cyan Labs }\n');
    for (const token of [
      demo.token('aurora-research', 'TENANT_ADMIN'),
      demo.token('borealis-inference', 'MEMBER'),
    ]) {
      const before = await demo.rowCounts({ ignoreAudit: true });
      const run = await apply(demo.url, token, ['-f', file]);
      expect(run.code).toBe(EXIT.AUTH);
      expect(run.err.join('\n')).toMatch(/FORBIDDEN/);
      expect(run.mutations).toBe(0);
      expect(await demo.rowCounts({ ignoreAudit: true })).toEqual(before);
    }
  });
});
