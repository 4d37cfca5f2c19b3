import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { schema } from '../schema/index.js';
import { codesOf, startTestApp, type TestApp } from './helpers/harness.js';
import { dialectsUnderTest } from './helpers/database.js';
import { buildArgs, idPathsOf, operationFor, rootFields, selectionFor } from './helpers/schema-walk.js';

/**
 * Generated from the schema: every query field and mutation that takes an ID (anywhere
 * in its arguments) is called by tenant B with each of tenant A's IDs. B must get
 * NOT_FOUND or FORBIDDEN, learn nothing of A, and change nothing. A new field is
 * covered the day it is added.
 */
for (const dialect of dialectsUnderTest) {
  describe(`cross-tenant matrix (${dialect})`, () => {
    let t: TestApp;
    let victimIds: Record<string, string>;
    let attackers: { name: string; bearer: string }[];
    /** Strings that would betray tenant A if they appeared in any answer to B. */
    let secrets: string[];

    beforeAll(async () => {
      t = await startTestApp({ dialect });
      victimIds = await t.idsOf('aurora-research');
      await t.idsOf('borealis-inference');
      attackers = [
        { name: 'borealis admin (JWT session)', bearer: await t.jwt('bea@borealis.example') },
        { name: 'borealis admin (API token)', bearer: t.token('borealis-inference', 'TENANT_ADMIN') },
        { name: 'borealis member (API token)', bearer: t.token('borealis-inference', 'MEMBER') },
      ];
      const rawIds = Object.entries(victimIds)
        .filter(([k]) => k !== 'slug')
        .map(([, v]) => Buffer.from(v, 'base64').toString().split(':')[1]!);
      secrets = ['aurora', 'Aurora', 'llm-pretraining', ...rawIds, ...Object.values(victimIds)];
    }, 60_000);
    afterAll(async () => {
      await t?.close();
    });

    const cases: { kind: 'query' | 'mutation'; field: string; idPath: string; victim: string }[] = [];
    for (const kind of ['query', 'mutation'] as const) {
      for (const field of rootFields(schema, kind)) {
        const idPaths = idPathsOf(field);
        const stringSlug = field.args.some((a) => a.name === 'slug');
        for (const path of idPaths) {
          for (const victim of ['Tenant', 'Project', 'Member', 'AdminMember', 'ApiToken', 'AuditEvent', 'Queue', 'Job']) {
            cases.push({ kind, field: field.name, idPath: path.join('.'), victim });
          }
        }
        if (stringSlug) cases.push({ kind, field: field.name, idPath: 'slug', victim: 'slug' });
      }
    }

    it('covers every ID-taking root field of the schema', () => {
      const covered = new Set(cases.map((c) => `${c.kind}.${c.field}`));
      for (const kind of ['query', 'mutation'] as const) {
        for (const field of rootFields(schema, kind)) {
          if (idPathsOf(field).length > 0) expect(covered.has(`${kind}.${field.name}`)).toBe(true);
        }
      }
      expect(cases.length).toBeGreaterThan(50);
    });

    it.each(cases)('$kind $field with A\'s $victim at $idPath', async ({ kind, field: fieldName, idPath, victim }) => {
      const field = rootFields(schema, kind).find((f) => f.name === fieldName)!;
      const args = buildArgs(field, (path) => (path.join('.') === idPath ? victimIds[victim]! : victimIds.Tenant!));
      if (idPath === 'slug') args.slug = 'aurora-research';
      const { query, variables } = operationFor(kind, field, args, selectionFor(field.type, 3));
      for (const attacker of attackers) {
        const before = await t.rowCounts({ ignoreAudit: true });
        const res = await t.gql(attacker.bearer, query, variables);
        const codes = codesOf(res);
        expect(codes.length, `${attacker.name}: ${JSON.stringify(res.body)}`).toBeGreaterThan(0);
        for (const code of codes) expect(['NOT_FOUND', 'FORBIDDEN'], `${attacker.name}: ${JSON.stringify(res.body)}`).toContain(code);
        expect(res.body.data?.[fieldName] ?? null).toBeNull();
        const text = JSON.stringify(res.body);
        for (const secret of secrets) expect(text.includes(secret), `${attacker.name} learned "${secret}": ${text}`).toBe(false);
        expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
      }
    });

    it('NOT_FOUND for a foreign ID reads exactly like NOT_FOUND for an ID that never existed', async () => {
      const ghost = Buffer.from('Project:01900000-0000-7000-8000-000000000000').toString('base64');
      const bearer = attackers[0]!.bearer;
      const foreign = await t.gql(bearer, `query($id: ID!) { node(id: $id) { id } }`, { id: victimIds.Project });
      const missing = await t.gql(bearer, `query($id: ID!) { node(id: $id) { id } }`, { id: ghost });
      expect(foreign.status).toBe(missing.status);
      expect(foreign.body).toEqual(missing.body);
    });

    it('argument-free queries show B nothing of A', async () => {
      for (const field of rootFields(schema, 'query')) {
        if (field.args.some((a) => a.type.toString().endsWith('!'))) continue;
        const { query, variables } = operationFor('query', field, {}, selectionFor(field.type, 4));
        for (const attacker of attackers) {
          const res = await t.gql(attacker.bearer, query, variables);
          const text = JSON.stringify(res.body);
          for (const secret of secrets) expect(text.includes(secret), `${field.name} leaked "${secret}" to ${attacker.name}`).toBe(false);
        }
      }
    });
  });
}
