import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { MikroORM } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import type { DatabaseConfig } from '../../src/config.js';

export type Dialect = 'sqlite' | 'postgresql';

/** SQLite always; PostgreSQL too when TEST_DATABASE_URL is set (.ci/run sets it). */
export const dialectsUnderTest: Dialect[] = process.env.TEST_DATABASE_URL ? ['sqlite', 'postgresql'] : ['sqlite'];

export interface TestDatabase {
  database: DatabaseConfig;
  dispose(): Promise<void>;
}

/** A fresh, empty database: a temp SQLite file, or a new PostgreSQL database dropped afterwards. */
export async function createTestDatabase(dialect: Dialect): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-test-'));
    return {
      database: { dialect: 'sqlite', file: path.join(dir, 'test.db') },
      dispose: async () => fs.rmSync(dir, { recursive: true, force: true }),
    };
  }
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
  const name = `fairway_t_${randomBytes(6).toString('hex')}`;
  const admin = await MikroORM.init({ driver: PostgreSqlDriver, clientUrl: adminUrl, entities: [], discovery: { warnWhenNoEntities: false }, allowGlobalContext: true });
  await admin.em.getConnection().execute(`create database "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    database: { dialect: 'postgresql', url: url.toString() },
    dispose: async () => {
      await admin.em.getConnection().execute(`drop database if exists "${name}" with (force)`);
      await admin.close(true);
    },
  };
}
