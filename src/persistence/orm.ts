import fs from 'node:fs';
import path from 'node:path';
import { MikroORM, type Options } from '@mikro-orm/core';
import { BetterSqliteDriver } from '@mikro-orm/better-sqlite';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import type { DatabaseConfig } from '../config.js';
import { allEntities } from './entities.js';
import { schedulingEntities } from './scheduling-entities.js';
import { sqliteMigrations } from '../../migrations/sqlite/index.js';
import { postgresqlMigrations } from '../../migrations/postgresql/index.js';

export interface OrmOptions {
  database: DatabaseConfig;
  /** Called with every SQL statement; tests count statements with it. */
  onQuery?: (sql: string) => void;
}

export function ormConfig(options: OrmOptions): Options {
  const { database } = options;
  const logging: Partial<Options> = options.onQuery
    ? { debug: ['query'], logger: (message: string) => options.onQuery!(message) }
    : { debug: false };
  const common: Partial<Options> = {
    entities: [...allEntities, ...schedulingEntities],
    extensions: [Migrator],
    // Requests always fork their own EntityManager; the global one is a bug.
    allowGlobalContext: false,
    // Migrations are listed statically (see migrations/<dialect>/index.ts), so neither
    // tsx nor vitest has to import .ts files by path at run time.
    dynamicImportProvider: (id: string) => import(id),
    ...logging,
  };
  if (database.dialect === 'postgresql') {
    return {
      ...common,
      driver: PostgreSqlDriver,
      clientUrl: database.url,
      migrations: {
        tableName: 'fairway_migrations',
        path: 'migrations/postgresql',
        migrationsList: postgresqlMigrations,
        silent: true,
        transactional: true,
        snapshot: false,
      },
    } as Options;
  }
  if (database.file !== ':memory:') fs.mkdirSync(path.dirname(database.file), { recursive: true });
  return {
    ...common,
    driver: BetterSqliteDriver,
    dbName: database.file,
    migrations: {
      tableName: 'fairway_migrations',
      path: 'migrations/sqlite',
      migrationsList: sqliteMigrations,
      silent: true,
      transactional: true,
      snapshot: false,
    },
  } as Options;
}

export async function openDatabase(options: OrmOptions): Promise<MikroORM> {
  const orm = await MikroORM.init(ormConfig(options));
  if (options.database.dialect === 'sqlite') {
    const connection = orm.em.getConnection() as unknown as { execute(sql: string): Promise<unknown> };
    // WAL lets readers proceed while the scheduler writes; foreign keys are off by default in SQLite.
    if (options.database.file !== ':memory:') await connection.execute('pragma journal_mode = wal');
    await connection.execute('pragma foreign_keys = on');
  }
  return orm;
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await orm.getMigrator().up();
  return applied.map((m) => m.name);
}
