// A fresh PostgreSQL database per run for part 2 on PostgreSQL: created from BENCH_PG_URL (a
// server where the bench may CREATE/DROP DATABASE; that URL's own database is used for nothing
// else), named fairway_bench_<random>, dropped after the part — also when it fails (registered
// in `live`, which index.ts stops on a failure).
import crypto from 'node:crypto';
import pg from 'pg';
import { live } from './servers.js';

export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  /** DATABASE_URL for the server: the admin URL with the fresh database's name as its path. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

async function admin<T>(adminUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 3000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates the database, or returns why it could not (PostgreSQL not reachable, no right to create). */
export async function createBenchDatabase(adminUrl: string): Promise<BenchDatabase | { error: string }> {
  const name = `fairway_bench_${crypto.randomBytes(5).toString('hex')}`;
  try {
    await admin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  } catch (error) {
    return { error: error instanceof Error ? error.message || error.constructor.name : String(error) };
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const drop = async () => {
    live.delete(drop);
    try {
      // WITH (FORCE) (PostgreSQL 13+) ends sessions a killed server may have left behind.
      await admin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    } catch (error) {
      console.error(`could not drop ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  live.add(drop);
  return { url: url.toString(), name, drop };
}

/** Host:port/db of a URL without its credentials, for the report. */
export function redact(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.username ? `${u.username}@` : ''}${u.host}${u.pathname}`;
}
