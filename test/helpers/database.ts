import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { describe, it } from 'vitest';
import type { DatabaseConfig } from '../../src/config/index.js';

export type Dialect = 'sqlite' | 'postgresql';

/** The services a suite can need, and the variable that points at each. */
export type TestService = 'postgresql' | 'redis';
const serviceVariable: Record<TestService, string> = {
  postgresql: 'TEST_DATABASE_URL',
  redis: 'TEST_REDIS_URL',
};

/** The URL of a test service, or undefined when its variable is unset. */
export function serviceUrl(service: TestService): string | undefined {
  return process.env[serviceVariable[service]] || undefined;
}

/**
 * A suite that needs PostgreSQL and/or Redis. When a variable is missing the suite never
 * silently vanishes: outside CI it is skipped with the reason in its name (vitest counts
 * it as skipped); with CI=true it is a failing test, so a CI run without the services is red.
 */
export function describeNeeding(needs: TestService[], name: string, body: () => void): void {
  const missing = needs.filter((s) => !serviceUrl(s)).map((s) => serviceVariable[s]);
  if (!missing.length) {
    describe(name, body);
  } else if (process.env.CI) {
    describe(name, () => {
      it(`needs ${missing.join(' and ')} (CI=true: a missing service fails the run)`, () => {
        throw new Error(`${missing.join(' and ')} not set: CI must provide ${needs.join(' and ')}`);
      });
    });
  } else {
    describe.skip(`${name} [skipped: set ${missing.join(' and ')} to run it]`, body);
  }
}

/** The same suite on SQLite and on PostgreSQL; the PostgreSQL one follows `describeNeeding`. */
export function describeEachDialect(name: string, body: (dialect: Dialect) => void): void {
  describe(`${name} (sqlite)`, () => body('sqlite'));
  describeNeeding(['postgresql'], `${name} (postgresql)`, () => body('postgresql'));
}

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
  const admin = await MikroORM.init({
    driver: PostgreSqlDriver,
    clientUrl: adminUrl,
    entities: [],
    discovery: { warnWhenNoEntities: false },
    allowGlobalContext: true,
  });
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
