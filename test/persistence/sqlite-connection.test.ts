import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, load } from '../../src/config/index.js';
import { cachePreparedStatements, migrate, openDatabase } from '../../src/persistence/orm.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';

describe('SQLite connection: prepared-statement cache and synchronous level', () => {
  it('prepares a SQL text once, keeps the most recently used, and drops the oldest past its bound', () => {
    const prepared: string[] = [];
    const connection = { pragma: () => undefined, prepare: (sql: string) => (prepared.push(sql), { sql }) };
    cachePreparedStatements(connection);
    const first = connection.prepare('select 1');
    expect(connection.prepare('select 1')).toBe(first);
    expect(prepared).toEqual(['select 1']);
    for (let i = 0; i < 600; i++) connection.prepare(`select ${i + 2}`);
    // 'select 1' was the least recently used: it is prepared again.
    expect(connection.prepare('select 1')).not.toBe(first);
    expect(prepared.filter((s) => s === 'select 1')).toHaveLength(2);
  });

  describe('through the ORM', () => {
    let orm: MikroORM;
    let dir: string;
    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-stmt-cache-'));
      orm = await openDatabase({ database: { dialect: 'sqlite', file: path.join(dir, 'fairway.db') } });
      await migrate(orm);
    });
    afterAll(async () => {
      await orm.close(true);
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('answers a repeated query from the same statement with current data, also after a schema change', async () => {
      const em = () => systemEntityManager(orm).fork();
      const slugs = async () =>
        (await em().find(Tenant, {}, { orderBy: { slug: 'asc' } })).map((t) => t.slug);
      const e1 = em();
      e1.create(Tenant, { slug: 'one', name: 'One' } as never);
      await e1.flush();
      expect(await slugs()).toEqual(['one']);
      const e2 = em();
      e2.create(Tenant, { slug: 'two', name: 'Two' } as never);
      await e2.flush();
      expect(await slugs()).toEqual(['one', 'two']);
      // A cached statement is re-prepared by SQLite itself when the schema changes under it.
      await orm.em.getConnection().execute('alter table tenants add column scratch_note text');
      expect(await slugs()).toEqual(['one', 'two']);
    });
  });

  it('commits with synchronous=NORMAL in WAL mode by default, FULL when configured, and refuses other values', async () => {
    const level = async (synchronous?: 'normal' | 'full') => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-sync-'));
      const orm = await openDatabase({
        database: {
          dialect: 'sqlite',
          file: path.join(dir, 'f.db'),
          ...(synchronous ? { synchronous } : {}),
        },
      });
      try {
        const rows = (await orm.em.getConnection().execute('pragma synchronous')) as {
          synchronous: number;
        }[];
        const mode = (await orm.em.getConnection().execute('pragma journal_mode')) as {
          journal_mode: string;
        }[];
        return [rows[0]!.synchronous, mode[0]!.journal_mode];
      } finally {
        await orm.close(true);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    };
    expect(await level()).toEqual([1, 'wal']);
    expect(await level('full')).toEqual([2, 'wal']);
    const env = { FAIRWAY_DATA_DIR: os.tmpdir() };
    expect(load(env).database).toMatchObject({ dialect: 'sqlite', synchronous: 'normal' });
    expect(load({ ...env, FAIRWAY_SQLITE_SYNCHRONOUS: 'full' }).database).toMatchObject({
      synchronous: 'full',
    });
    expect(() => load({ ...env, FAIRWAY_SQLITE_SYNCHRONOUS: 'off' })).toThrow(ConfigError);
  });
});
