import fs from 'node:fs';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresqlMigrations } from '../../migrations/postgresql/index.js';
import { sqliteMigrations } from '../../migrations/sqlite/index.js';
import { migrate, openDatabase } from '../../src/persistence/orm.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { createTestDatabase, describeEachDialect, type TestDatabase } from '../helpers/database.js';
import { introspectSchema } from '../helpers/schema-introspect.js';

const listed = { sqlite: sqliteMigrations, postgresql: postgresqlMigrations };

/**
 * The schema the migrations build must be the schema the entities describe, compared as
 * each database really has it: one database is built by running the migrations, another
 * straight from the entities (MikroORM's schema generator), and both are read back from
 * the catalogue (columns with types, nullability and defaults; indexes; foreign keys; checks).
 */
describeEachDialect('migrations', (dialect) => {
  const opened: { orm: MikroORM; db: TestDatabase }[] = [];
  async function fresh() {
    const db = await createTestDatabase(dialect);
    const orm = await openDatabase({ database: db.database });
    opened.push({ orm, db });
    return orm;
  }
  afterAll(async () => {
    for (const { orm, db } of opened) {
      await orm.close(true);
      await db.dispose();
    }
  });

  it('apply on an empty database and re-run as a no-op', async () => {
    const orm = await fresh();
    expect(await migrate(orm)).toEqual(listed[dialect].map((m) => m.name));
    expect(await migrate(orm)).toEqual([]);
    const em = orm.em.fork();
    em.setFilterParams(TENANT_FILTER, { all: true });
    em.create(Tenant, {
      slug: 'm-test',
      name: 'Migration test',
      tier: 'STANDARD',
      isolationLevel: 'ELASTIC',
      status: 'ACTIVE',
    });
    await em.flush();
    expect(await em.fork().count(Tenant, { slug: 'm-test' })).toBe(1);
  });

  it("build the same schema as the entities, read back from the database's catalogue", async () => {
    const migrated = await fresh();
    await migrate(migrated);
    const fromEntities = await fresh();
    await fromEntities.getSchemaGenerator().createSchema();
    const actual = await introspectSchema(migrated, dialect);
    const expected = await introspectSchema(fromEntities, dialect);
    expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
    for (const table of Object.keys(expected)) {
      expect(actual[table]?.columns, `${table}: columns`).toEqual(expected[table]!.columns);
      expect(actual[table]?.indexes, `${table}: indexes`).toEqual(expected[table]!.indexes);
      expect(actual[table]?.foreignKeys, `${table}: foreign keys`).toEqual(expected[table]!.foreignKeys);
      expect(actual[table]?.checks, `${table}: checks`).toEqual(expected[table]!.checks);
    }
  });
});

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
});
