// The same usage query through the API: a gateway started as `npm start` runs it
// (`node --import tsx src/main.ts`, NODE_ENV=production) on the loaded scratch database, asked
// over HTTP with a tenant admin's API token — the graph's own cost (parsing, auth, the project
// names through the loaders, serialisation) on top of readUsage.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { encodeGlobalID } from '@pothos/plugin-relay';
import {
  displayPrefix,
  generateApiTokenSecret,
  hashApiTokenSecret,
} from '../../src/auth/api-token-secret.js';
import { ROLE_CAPABILITIES } from '../../src/auth/capabilities.js';
import { ApiToken, Membership } from '../../src/persistence/tenancy/entities.js';
import { scopedEntityManager } from '../../src/persistence/tenant-filter.js';
import { cpuSeconds } from '../api/process-stats.js';
import { spawnAndWait, stopper } from '../api/servers.js';
import type { UsageWindow } from './queries.js';

/** A TENANT_ADMIN membership for `userId` and an API token with the role's scopes; returns the secret. */
export async function tenantAdminToken(orm: MikroORM, tenantId: string, userId: string): Promise<string> {
  const em = scopedEntityManager(orm, { all: true });
  const secret = generateApiTokenSecret();
  em.create(Membership, { tenant: tenantId, user: userId, role: 'TENANT_ADMIN', invitedName: null });
  em.create(ApiToken, {
    tenant: tenantId,
    createdBy: userId,
    name: 'bench:usage',
    scopes: [...ROLE_CAPABILITIES.TENANT_ADMIN].sort(),
    tokenHash: hashApiTokenSecret(secret),
    prefix: displayPrefix(secret),
    expiresAt: new Date(Date.now() + 86_400_000),
    revokedAt: null,
    lastUsedAt: null,
  });
  await em.flush();
  return secret;
}

export interface Gateway {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

/** `databaseUrl`: sqlite:<file> or the PostgreSQL URL of the scratch database. */
export async function startGateway(databaseUrl: string): Promise<Gateway> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fw-bench-usage-gw-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: dataDir,
    FAIRWAY_DEMO: 'false',
    FAIRWAY_DEMO_TRICKLE: 'false',
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
  };
  delete env.REDIS_URL;
  delete env.FAIRWAY_GRAPHIQL;
  // As bench:api: e.g. BENCH_SERVER_NODE_ARGS=--cpu-prof to see where the gateway's time goes.
  const extra = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const { child, match } = await spawnAndWait(
    [...extra, '--import', 'tsx', 'src/main.ts'],
    env,
    /serving on (http:\/\/\S+\/graphql)/,
    'fairway',
  );
  const stop = stopper(child);
  return {
    url: match[1]!,
    pid: child.pid!,
    stop: async () => {
      await stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const QUERY = `query Usage($tenant: ID!, $from: DateTime!, $to: DateTime!) {
  usage(tenantId: $tenant, groupBy: [PROJECT], from: $from, to: $to, granularity: DAY) {
    currency
    rows { periodStart project { id name } gpuHours cost efficiency jobs }
    total { gpuHours cost jobs }
  }
}`;

/** One POST of the usage query; returns the number of rows answered (throws on errors). */
export function graphqlQuery(gateway: Gateway, token: string, w: UsageWindow): () => Promise<number> {
  const body = JSON.stringify({
    query: QUERY,
    variables: {
      tenant: encodeGlobalID('Tenant', w.tenantId),
      from: w.from.toISOString(),
      to: w.to.toISOString(),
    },
  });
  return async () => {
    const res = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body,
    });
    const json = (await res.json()) as {
      data?: { usage?: { rows: unknown[] } };
      errors?: { message: string }[];
    };
    if (json.errors?.length || !json.data?.usage)
      throw new Error(`usage over HTTP: ${res.status} ${JSON.stringify(json.errors ?? json)}`);
    return json.data.usage.rows.length;
  };
}

/** The gateway's CPU ms so far (10 ms ticks: compare over many calls). */
export const gatewayCpuMs = (gateway: Gateway) => cpuSeconds(gateway.pid) * 1000;
