// `fairway apply` against a real server: the CLI's own context (real HTTP) counting what it sends,
// and an empty platform with only a platform admin and its API token (test/cli/apply*.test.ts).
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import {
  displayPrefix,
  generateApiTokenSecret,
  hashApiTokenSecret,
} from '../../src/auth/api-token-secret.js';
import { runApply } from '../../src/cli/tenant/apply.js';
import { createCliContext } from '../../src/cli/tenant/context.js';
import { ApiToken, User } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { startTestApp, type TestApp } from './harness.js';

export interface ApplyRun {
  code: number;
  out: string[];
  err: string[];
  requests: number;
  mutations: number;
}

/** Runs `fairway apply ARGS` against `url` (no login file is read: FAIRWAY_CONFIG_DIR is `configDir`). */
export async function runApplyCli(
  url: string,
  token: string | undefined,
  args: string[],
  configDir: string,
  stdin?: string,
): Promise<ApplyRun> {
  const run: ApplyRun = { code: -1, out: [], err: [], requests: 0, mutations: 0 };
  const ctx = await createCliContext({
    io: { out: (s) => run.out.push(s), err: (s) => run.err.push(s) },
    env: { FAIRWAY_CONFIG_DIR: configDir },
    flags: { server: url, ...(token ? { token } : {}) },
    ...(stdin !== undefined ? { stdin: Readable.from([stdin]) } : {}),
  });
  const send = ctx.request.bind(ctx);
  ctx.request = (query, variables) => {
    run.requests++;
    if (query.trimStart().startsWith('mutation')) run.mutations++;
    return send(query, variables);
  };
  run.code = await runApply(args, ctx);
  return run;
}

export function writeSpec(dir: string, name: string, text: string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
}

/** A server without the demo: one platform admin (root@platform.example) and its API token. */
export async function startEmptyPlatform(): Promise<{ app: TestApp; adminToken: string }> {
  const app = await startTestApp({ seed: false });
  const adminToken = generateApiTokenSecret();
  await systemEntityManager(app.app.orm).transactional(async (em) => {
    const user = em.create(User, {
      email: 'root@platform.example',
      name: 'Root',
      isPlatformAdmin: true,
      externalId: null,
    });
    em.create(ApiToken, {
      tenant: null,
      createdBy: user,
      name: 'apply test',
      scopes: [],
      tokenHash: hashApiTokenSecret(adminToken),
      prefix: displayPrefix(adminToken),
      expiresAt: new Date(Date.now() + 86_400_000),
      revokedAt: null,
      lastUsedAt: null,
    });
  });
  return { app, adminToken };
}
