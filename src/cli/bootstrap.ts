/**
 * `npm run bootstrap -- --email admin@example.com [--name "Ada Admin"]`
 *
 * Creates the first platform admin of a production installation and one platform API token
 * for them, printed once to stdout (only its hash is stored). In production the server seeds
 * no demo (FAIRWAY_DEMO defaults to false), so without this command nobody could sign in to
 * create tenants. It reads the same environment as the server (DATABASE_URL, FAIRWAY_DATA_DIR)
 * and migrates the database first, so it may run before the server ever started.
 *
 * It refuses (exit 1) once any platform admin exists: later admins are made by an admin,
 * through the API and its audit log, not by whoever can run a command on the host.
 */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { displayPrefix, generateApiTokenSecret, hashApiTokenSecret } from '../auth/index.js';
import { ConfigError, load } from '../config/index.js';
import { AuditEvent } from '../persistence/audit/index.js';
import { uuidv7 } from '../persistence/ids.js';
import { migrate, openDatabase } from '../persistence/orm.js';
import { ApiToken, User } from '../persistence/tenancy/index.js';
import { systemEntityManager } from '../persistence/tenant-filter.js';
import { MAX_TOKEN_LIFETIME_DAYS } from '../services/tenancy/index.js';

const HELP = `usage: npm run bootstrap -- --email EMAIL [--name NAME] [--expires-in-days N]

Creates the first platform admin and prints a platform API token for them, once.
Uses the server's configuration (DATABASE_URL, FAIRWAY_DATA_DIR) and migrates the database.
Refuses when a platform admin already exists.

  --email EMAIL          the admin's email (their user name in Fairway and for OIDC)
  --name NAME            display name (default: Platform Admin)
  --expires-in-days N    token lifetime, 1-${MAX_TOKEN_LIFETIME_DAYS} (default ${MAX_TOKEN_LIFETIME_DAYS})
  -h, --help             this help`;

/** A refusal the operator can act on: printed as one line, no stack trace, exit 1. */
export class BootstrapRefused extends Error {}

const argsSchema = z.object({
  email: z
    .string({ error: '--email is required' })
    .trim()
    .toLowerCase()
    .pipe(z.email('--email must be an email address'))
    .refine((e) => e.length <= 254, '--email is too long'),
  name: z
    .string()
    .trim()
    .min(1, '--name must not be empty')
    .max(200, '--name is too long')
    .default('Platform Admin'),
  expiresInDays: z.coerce
    .number()
    .int('--expires-in-days must be a whole number')
    .min(1)
    .max(MAX_TOKEN_LIFETIME_DAYS, `--expires-in-days must be at most ${MAX_TOKEN_LIFETIME_DAYS}`)
    .default(MAX_TOKEN_LIFETIME_DAYS),
});

export interface BootstrapResult {
  email: string;
  token: string;
  expiresAt: Date;
  /** True when a user with that email existed (e.g. from OIDC) and was made platform admin. */
  promoted: boolean;
}

export function parseBootstrapArgs(argv: string[]): z.infer<typeof argsSchema> | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        email: { type: 'string' },
        name: { type: 'string' },
        'expires-in-days': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new BootstrapRefused(`${(error as Error).message}\n\n${HELP}`);
  }
  if (values.help) return 'help';
  const parsed = argsSchema.safeParse({
    email: values.email,
    name: values.name,
    expiresInDays: values['expires-in-days'],
  });
  if (!parsed.success)
    throw new BootstrapRefused(`${parsed.error.issues.map((i) => i.message).join('; ')}\n\n${HELP}`);
  return parsed.data;
}

export async function bootstrap(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
  now: () => number = Date.now,
): Promise<BootstrapResult | 'help'> {
  const args = parseBootstrapArgs(argv);
  if (args === 'help') return 'help';
  const config = load(env);
  const orm = await openDatabase({ database: config.database, timeouts: config.database.timeouts });
  try {
    await migrate(orm);
    // One transaction: two bootstraps racing cannot both see "no admin" and both commit on
    // SQLite (one writer); on PostgreSQL the unique email still stops the same admin twice.
    return await systemEntityManager(orm).transactional(async (em) => {
      const existing = await em.find(User, { isPlatformAdmin: true }, { limit: 1 });
      if (existing.length > 0) {
        throw new BootstrapRefused(
          `a platform admin already exists (${existing[0]!.email}); nothing was changed. Further admins and tokens are created through the API by an admin.`,
        );
      }
      let user = await em.findOne(User, { email: args.email });
      const promoted = !!user;
      if (user) user.isPlatformAdmin = true;
      else
        user = em.create(User, {
          id: uuidv7(),
          email: args.email,
          name: args.name,
          isPlatformAdmin: true,
          externalId: null,
        });
      const secret = generateApiTokenSecret();
      const expiresAt = new Date(now() + args.expiresInDays * 86_400_000);
      const token = em.create(ApiToken, {
        id: uuidv7(),
        tenant: null,
        createdBy: user,
        name: 'bootstrap platform token',
        scopes: [],
        tokenHash: hashApiTokenSecret(secret),
        prefix: displayPrefix(secret),
        expiresAt,
        revokedAt: null,
        lastUsedAt: null,
      });
      // Visible to platform admins like any platform-level change; the secret never is.
      em.create(AuditEvent, {
        tenant: null,
        actor: user,
        actorTokenId: null,
        action: 'platform.bootstrap',
        targetType: 'User',
        targetId: user.id,
        input: { email: args.email, promoted, tokenId: token.id },
        outcome: 'SUCCESS',
        errorCode: null,
        requestId: 'bootstrap-cli',
      });
      return { email: args.email, token: secret, expiresAt, promoted };
    });
  } finally {
    await orm.close(true);
  }
}

async function main(): Promise<void> {
  try {
    const result = await bootstrap(process.argv.slice(2));
    if (result === 'help') {
      console.log(HELP);
      return;
    }
    // The token alone on stdout (scripts capture it); the explanation on stderr.
    console.error(
      `${result.promoted ? 'Made the existing user' : 'Created platform admin'} ${result.email}. Platform API token (shown once; expires ${result.expiresAt.toISOString().slice(0, 10)}):`,
    );
    console.log(result.token);
    console.error(
      'Send it as "Authorization: Bearer <token>". It is not stored anywhere in clear: keep it now.',
    );
  } catch (error) {
    if (error instanceof BootstrapRefused || error instanceof ConfigError) {
      console.error(`bootstrap: ${error.message}`);
    } else {
      // A database that cannot be opened, a failed migration: the message, not a stack trace.
      console.error(`bootstrap failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    process.exitCode = 1;
  }
}

// Run only as a command, not when a test imports `bootstrap`.
if (process.argv[1] && /bootstrap\.[jt]s$/.test(process.argv[1])) await main();
