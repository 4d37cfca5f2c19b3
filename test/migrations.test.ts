import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate, openDatabase } from '../src/persistence/orm.js';
import { Tenant, TENANT_FILTER } from '../src/persistence/entities.js';
import { sqliteMigrations } from '../migrations/sqlite/index.js';
import { postgresqlMigrations } from '../migrations/postgresql/index.js';
import { createTestDatabase, dialectsUnderTest } from './helpers/database.js';

const listed = { sqlite: sqliteMigrations, postgresql: postgresqlMigrations };

for (const dialect of dialectsUnderTest) {
  describe(`migrations on ${dialect}`, () => {
    it('apply on an empty database, leave nothing for the entities to add, and re-run as a no-op', async () => {
      const db = await createTestDatabase(dialect);
      const orm = await openDatabase({ database: db.database });
      try {
        const applied = await migrate(orm);
        expect(applied).toEqual(listed[dialect].map((m) => m.name));
        expect(await migrate(orm)).toEqual([]);
        // The migrations must produce the schema the entities describe.
        if (dialect === 'postgresql') {
          const drift = await orm.getSchemaGenerator().getUpdateSchemaSQL({ wrap: false });
          expect(drift.trim()).toBe('');
        } else {
          // MikroORM's SQLite comparator cannot read back enum CHECK constraints and always
          // proposes table rebuilds, so compare tables and columns directly instead.
          const connection = orm.em.getConnection();
          for (const meta of Object.values(orm.getMetadata().getAll()).filter((m) => !m.embeddable && m.tableName)) {
            const columns = (await connection.execute(`pragma table_info(\`${meta.tableName}\`)`)) as { name: string }[];
            const expected = meta.props.flatMap((p) => p.fieldNames ?? []).sort();
            expect(columns.map((c) => c.name).sort(), meta.tableName).toEqual(expected);
          }
        }
        const em = orm.em.fork();
        em.setFilterParams(TENANT_FILTER, { all: true });
        em.create(Tenant, { slug: 'm-test', name: 'Migration test', tier: 'STANDARD', isolationLevel: 'ELASTIC', status: 'ACTIVE' });
        await em.flush();
        expect(await em.fork().count(Tenant, { slug: 'm-test' })).toBe(1);
      } finally {
        await orm.close(true);
        await db.dispose();
      }
    });
  });
}

describe('migration folders', () => {
  for (const dialect of ['sqlite', 'postgresql'] as const) {
    it(`${dialect}: index.ts lists every migration file in order`, () => {
      const files = fs
        .readdirSync(path.join('migrations', dialect))
        .filter((f) => /^Migration\d+.*\.ts$/.test(f))
        .map((f) => f.replace(/\.ts$/, ''))
        .sort();
      expect(listed[dialect].map((m) => m.name)).toEqual(files);
    });
  }
  it('TEST_DATABASE_URL decides whether PostgreSQL is tested (CI sets it)', () => {
    expect(dialectsUnderTest.includes('postgresql')).toBe(Boolean(process.env.TEST_DATABASE_URL));
    if (process.env.CI) expect(process.env.TEST_DATABASE_URL, '.ci/run must set TEST_DATABASE_URL').toBeTruthy();
  });
});
