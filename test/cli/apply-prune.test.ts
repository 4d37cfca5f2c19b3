// `fairway apply --prune`: platform objects the file no longer names are deleted through the
// API (node pools, cohorts, priority classes, flavors), shown in the plan first; the server
// refuses what is still in use and the run reports it; tenants and queues are never deleted.
// Without --prune nothing is deleted. Also: cohorts and node pools of the file are updated.
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
import { expectOk, type TestApp } from '../helpers/harness.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-prune-'));
const EXAMPLE = fs.readFileSync(path.resolve('examples/platform.yaml'), 'utf8');

let server: TestApp;
let admin: string;
const apply = (args: string[]): Promise<ApplyRun> => runApplyCli(server.url, admin, args, tmp);
const writeSpec = (name: string, text: string): string => writeSpecIn(tmp, name, text);

/** The example with more flavors, cohorts and node pools appended to its lists. */
function exampleWith(extra: {
  flavors?: string;
  cohorts?: string;
  nodePools?: string;
  tenants?: string;
}): string {
  let text = EXAMPLE;
  const at = (anchor: string, insert: string) => {
    expect(text).toContain(anchor);
    text = text.replace(anchor, `${anchor}${insert}`);
  };
  if (extra.flavors) at('    pricePerUnitHour: 0.45\n', extra.flavors);
  if (extra.cohorts) at('quotas: what the cohort itself holds\n', extra.cohorts);
  if (extra.nodePools)
    at(
      '{ name: a100-mig-node-2, flavor: a100-1g.10gb, gpus: 8, cpuMillis: 128000, memoryMiB: 524288 }\n',
      extra.nodePools,
    );
  if (extra.tenants) text = `${text}${extra.tenants}`;
  return text;
}

const EXTRA = {
  flavors: '  - { name: l40s-48g, kind: GPU, pricePerUnitHour: 1.2 }\n',
  cohorts: '  - { name: spare }\n  - { name: spare-child, parent: spare }\n',
  nodePools: '  - { name: extra, nodes: [] }\n',
};

const names = async (field: 'flavors' | 'cohorts' | 'nodePools' | 'priorityClasses'): Promise<string[]> =>
  (await expectOk(server, admin, `{ ${field} { name } }`))[field].map((o: { name: string }) => o.name).sort();

describe('fairway apply --prune', () => {
  beforeAll(async () => {
    ({ app: server, adminToken: admin } = await startEmptyPlatform());
    expect((await apply(['-f', writeSpec('example.yaml', EXAMPLE)])).code).toBe(EXIT.OK);
  });
  afterAll(async () => {
    await server?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('shows the deletions in the plan, in the order they run; --check and a run without --prune delete nothing', async () => {
    const more = writeSpec('more.yaml', exampleWith(EXTRA));
    expect((await apply(['-f', more])).code).toBe(EXIT.OK);
    const example = writeSpec('example.yaml', EXAMPLE);

    const plain = await apply(['-f', example]);
    expect(plain.code).toBe(EXIT.OK);
    expect(plain.mutations).toBe(0);
    expect(plain.out).toContain('not managed (on the server, not in the file; left as they are):');
    expect(plain.out).toEqual(
      expect.arrayContaining(['    flavor l40s-48g', '    cohort spare', '    nodePool extra']),
    );

    const check = await apply(['-f', example, '--prune', '--check']);
    expect(check.code).toBe(EXIT.DIFF);
    expect(check.mutations).toBe(0);
    expect(check.out.filter((l) => l.startsWith('- '))).toEqual([
      '- nodePool extra',
      '- cohort spare-child',
      '- cohort spare',
      '- flavor l40s-48g',
    ]);
    expect(check.out.at(-1)).toBe(`${example}: 0 to create, 0 to update, 4 to delete, 12 unchanged.`);
    const json = JSON.parse((await apply(['-f', example, '--prune', '--check', '--json'])).out.join('\n'));
    expect(json.summary.delete).toBe(4);
    expect(json.prune).toBe(true);
    expect(await names('cohorts')).toEqual(['research-pool', 'spare', 'spare-child']);
  });

  it('deletes what the file no longer names; a second run has nothing to do', async () => {
    const example = writeSpec('example.yaml', EXAMPLE);
    const run = await apply(['-f', example, '--prune']);
    expect(run.code, run.err.join('\n')).toBe(EXIT.OK);
    expect(run.mutations).toBe(4);
    expect(run.out).toEqual(
      expect.arrayContaining([
        'deleted nodePool extra',
        'deleted cohort spare-child',
        'deleted flavor l40s-48g',
      ]),
    );
    expect(run.out.at(-1)).toBe('Applied: 0 created, 0 updated, 4 deleted.');
    expect(await names('flavors')).toEqual(['a100-1g.10gb', 'h100-80g']);
    expect(await names('cohorts')).toEqual(['research-pool']);
    expect(await names('nodePools')).toEqual(['shared']);
    const again = await apply(['-f', example, '--prune']);
    expect(again.code).toBe(EXIT.OK);
    expect(again.mutations).toBe(0);
    expect(again.out).toContain('Nothing to do.');
  });

  it('what is still in use is refused and reported (exit 5); the other deletions go on', async () => {
    const withUse = exampleWith({
      ...EXTRA,
      nodePools:
        '  - name: extra\n    nodes: [{ name: l40s-node-1, flavor: l40s-48g, gpus: 4, cpuMillis: 64000, memoryMiB: 262144 }]\n',
    });
    expect((await apply(['-f', writeSpec('in-use.yaml', withUse)])).code).toBe(EXIT.OK);
    // The file keeps the pool (and its node on l40s-48g) but no longer names the flavor nor the cohorts.
    const keepsPool = exampleWith({
      nodePools: withUse.slice(withUse.indexOf('  - name: extra'), withUse.indexOf('\ntenants:') + 1),
    });
    const run = await apply(['-f', writeSpec('keeps-pool.yaml', keepsPool), '--prune']);
    expect(run.code).toBe(EXIT.CONFLICT);
    expect(run.out).toEqual(expect.arrayContaining(['deleted cohort spare-child', 'deleted cohort spare']));
    const refused = run.out.find((l) => l.startsWith('not deleted flavor l40s-48g: '));
    expect(refused).toMatch(/node pool "extra".*\[CONFLICT\]$/);
    expect(run.err.join('\n')).toMatch(/1 object\(s\) not deleted/);
    expect(await names('flavors')).toContain('l40s-48g');
    expect(await names('cohorts')).toEqual(['research-pool']);

    // Emptied in the same file: the node leaves first (updateNodePool), then the pool and the flavor go.
    const emptied = exampleWith({ flavors: EXTRA.flavors, nodePools: EXTRA.nodePools });
    expect((await apply(['-f', writeSpec('emptied.yaml', emptied)])).out).toContain('updated nodePool extra');
    const json = JSON.parse(
      (await apply(['-f', writeSpec('example.yaml', EXAMPLE), '--prune', '--json'])).out.join('\n'),
    );
    expect(json.refused).toEqual([]);
    expect(json.applied).toEqual([
      { kind: 'nodePool', name: 'extra', action: 'delete' },
      { kind: 'flavor', name: 'l40s-48g', action: 'delete' },
    ]);
  });

  it('a cohort whose queue moves to another cohort in the same file is deleted after the move', async () => {
    const tenant = `  - slug: cyan-labs\n    name: Cyan Labs\n    queues:\n      - name: cyan-batch\n        cohort: COHORT\n        quotas: [{ flavor: h100-80g, nominal: 2 }]\n`;
    const first = exampleWith({
      cohorts: '  - { name: old-pool }\n',
      tenants: tenant.replace('COHORT', 'old-pool'),
    });
    expect((await apply(['-f', writeSpec('cyan-old.yaml', first)])).code).toBe(EXIT.OK);
    const refused = await apply(['-f', writeSpec('example.yaml', EXAMPLE), '--prune']);
    // The queue is still in it: refused; tenants and queues are never deleted.
    expect(refused.code).toBe(EXIT.CONFLICT);
    expect(refused.out.find((l) => l.startsWith('not deleted cohort old-pool'))).toMatch(
      /queue "cyan-batch"/,
    );
    expect(refused.out).toContain(
      'not pruned (on the server, not in the file; the API cannot delete these):',
    );
    expect(refused.out.find((l) => l.startsWith('    tenant cyan-labs'))).toMatch(/status: ARCHIVED/);
    expect(refused.out.find((l) => l.startsWith('    queue cyan-batch'))).toMatch(/no deleteQueue/);

    const moved = exampleWith({ tenants: tenant.replace('COHORT', 'research-pool') });
    const run = await apply(['-f', writeSpec('cyan-moved.yaml', moved), '--prune']);
    expect(run.code, run.err.join('\n')).toBe(EXIT.OK);
    expect(run.out.indexOf('updated queue cyan-batch')).toBeLessThan(
      run.out.indexOf('deleted cohort old-pool'),
    );
    expect(await names('cohorts')).toEqual(['research-pool']);
  });

  it('cohorts and node pools of the file are updated in place (updateCohort, updateNodePool)', async () => {
    const text = EXAMPLE.replace(
      '  - name: research-pool ',
      '  - name: research-pool\n    quotas: [{ flavor: h100-80g, nominal: 4 }]\n   ',
    ).replace(/ {6}- \{ name: a100-mig-node-2.*\n/, '');
    expect(text).not.toBe(EXAMPLE);
    const run = await apply(['-f', writeSpec('updated.yaml', text)]);
    expect(run.code, run.err.join('\n')).toBe(EXIT.OK);
    expect(run.out).toEqual(
      expect.arrayContaining(['updated cohort research-pool', 'updated nodePool shared']),
    );
    const data = await expectOk(
      server,
      admin,
      `{ cohorts { name quotas { nominal } } nodePools { nodes { name } } }`,
    );
    expect(data.cohorts[0].quotas).toEqual([{ nominal: 4 }]);
    expect(data.nodePools[0].nodes).toHaveLength(5);
    expect((await apply(['-f', writeSpec('updated.yaml', text), '--check'])).code).toBe(EXIT.OK);
  });

  it('priority classes the file drops are deleted, except those the server refuses (the API falls back to them)', async () => {
    const text = EXAMPLE.replace('  - name: training\n  - name: experiment\n', '');
    const run = await apply(['-f', writeSpec('classes.yaml', text), '--prune']);
    expect(run.code).toBe(EXIT.CONFLICT);
    expect(run.out).toContain('deleted priorityClass experiment');
    expect(run.out.find((l) => l.startsWith('not deleted priorityClass training'))).toMatch(/submitJob/);
    expect(await names('priorityClasses')).toEqual(['inference-critical', 'production', 'training']);
  });

  it('a priority class the file gives with its value and preemptible is created, then updated field by field', async () => {
    // experiment was pruned by the test before: it is created again from its default's fields.
    const withClass = (extra: string) =>
      EXAMPLE.replace(
        '  - name: experiment\n',
        `  - { name: experiment, value: 10, preemptible: YES }\n${extra}`,
      );
    const missing = await apply(['-f', writeSpec('class-missing.yaml', withClass('  - name: nightly\n'))]);
    expect(missing.out.join('\n')).toMatch(/priorityClass nightly[\s\S]*give its value and preemptible/);
    expect(await names('priorityClasses')).not.toContain('nightly');

    const created = await apply([
      '-f',
      writeSpec(
        'class.yaml',
        withClass(
          '  - { name: nightly, value: 50, preemptible: YES, description: Night sweeps, multiplier: 0.5 }\n',
        ),
      ),
    ]);
    expect(created.code, created.err.join('\n')).toBe(EXIT.OK);
    expect(created.out).toContain('created priorityClass nightly');
    const read = async () =>
      (await expectOk(
        server,
        admin,
        `{ priorityClasses { name value preemptible description } priceBook { multipliers { priorityClass multiplier current } } }`,
      )) as {
        priorityClasses: { name: string; value: number; preemptible: string; description: string }[];
        priceBook: { multipliers: { priorityClass: string; multiplier: number; current: boolean }[] };
      };
    let data = await read();
    expect(data.priorityClasses.find((c) => c.name === 'nightly')).toEqual({
      name: 'nightly',
      value: 50,
      preemptible: 'YES',
      description: 'Night sweeps',
    });
    expect(
      data.priceBook.multipliers.find((m) => m.priorityClass === 'nightly' && m.current)?.multiplier,
    ).toBe(0.5);
    const same = writeSpec(
      'class.yaml',
      withClass(
        '  - { name: nightly, value: 50, preemptible: YES, description: Night sweeps, multiplier: 0.5 }\n',
      ),
    );
    expect((await apply(['-f', same, '--check'])).code).toBe(EXIT.OK);

    const changed = await apply([
      '-f',
      writeSpec('class.yaml', withClass('  - { name: nightly, value: 60, preemptible: RECLAIM_ONLY }\n')),
    ]);
    expect(changed.code, changed.err.join('\n')).toBe(EXIT.OK);
    expect(changed.out).toContain('updated priorityClass nightly');
    data = await read();
    expect(data.priorityClasses.find((c) => c.name === 'nightly')).toMatchObject({
      value: 60,
      preemptible: 'RECLAIM_ONLY',
      description: 'Night sweeps',
    });
  });
});
