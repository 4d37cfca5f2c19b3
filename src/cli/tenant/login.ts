// fairway login / logout / whoami: the token is checked with a `viewer` query before it is stored.

import os from 'node:os';
import { COMMON_HELP, parse } from './args.js';
import { type CliContext, CliError, configDirOf, EXIT, normalizeServer, postGraphQL } from './context.js';
import { credentialsPath, removeCredentials, writeCredentials } from './credentials.js';
import { requireToken } from './lookup.js';
import { type ResultOf, send, text, WhoAmI } from './operations.js';

export const LOGIN_HELP = `usage: fairway login --server URL (--token-stdin | --token TOKEN)

Checks the token against the gateway and stores server and token in
$FAIRWAY_CONFIG_DIR, $XDG_CONFIG_HOME/fairway or ~/.config/fairway (credentials.json, mode 0600).
FAIRWAY_SERVER and FAIRWAY_TOKEN, or --server and --token on any command, override the file.

  --token-stdin      read the token from standard input (keeps it out of shell history)
  --json             print who you are as JSON
${COMMON_HELP}`;

export const LOGOUT_HELP = `usage: fairway logout

Removes the stored server and token.
${COMMON_HELP}`;

export const WHOAMI_HELP = `usage: fairway whoami [--json]

Who the server says you are, with your tenants and roles.
  --json             as JSON
${COMMON_HELP}`;

const configDir = (ctx: CliContext): string => ctx.configDir ?? configDirOf(ctx.env, os.homedir());

type Viewer = ResultOf<typeof WhoAmI>['viewer'];

function describe(viewer: Viewer): string {
  const tenants = viewer.memberships.map((m) => `${m.role} in ${m.tenant.slug}`).join(', ') || 'no tenant';
  const admin = viewer.isPlatformAdmin ? ', platform admin' : '';
  const kind =
    viewer.authKind === 'API_TOKEN'
      ? `API token${viewer.tokenScopes ? ` (${viewer.tokenScopes.join(', ').toLowerCase()})` : ''}`
      : 'user session';
  return `${viewer.name} <${viewer.email}>: ${tenants}${admin}; ${kind}`;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let data = '';
  for await (const chunk of stream)
    data += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
  return data;
}

export async function runLogin(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, { 'token-stdin': { type: 'boolean' } });
  if (values.help) {
    ctx.out(LOGIN_HELP);
    return EXIT.OK;
  }
  const rawServer = values.server || ctx.env.FAIRWAY_SERVER;
  if (!rawServer) throw new CliError('--server URL is required (e.g. http://localhost:4000)', EXIT.USAGE);
  if (values.token && values['token-stdin'])
    throw new CliError('give --token or --token-stdin, not both', EXIT.USAGE);
  const token = (
    values['token-stdin']
      ? await readAll(ctx.stdin ?? process.stdin)
      : values.token || ctx.env.FAIRWAY_TOKEN || ''
  ).trim();
  if (!token)
    throw new CliError(
      'no token: pass --token-stdin (e.g. `echo $TOKEN | fairway login --server URL --token-stdin`) or --token',
      EXIT.USAGE,
    );
  const server = normalizeServer(rawServer);
  // Checked against the server it will be stored with, before anything is written.
  const { viewer } = await postGraphQL<ResultOf<typeof WhoAmI>>(server, token, text(WhoAmI), {}, ctx.signal);
  const file = await writeCredentials(configDir(ctx), { server, token });
  if (ctx.json) ctx.out(JSON.stringify({ server, file, viewer }));
  else ctx.out(`logged in to ${server} as ${describe(viewer)}\ncredentials stored in ${file}`);
  return EXIT.OK;
}

export async function runLogout(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {});
  if (values.help) {
    ctx.out(LOGOUT_HELP);
    return EXIT.OK;
  }
  const removed = await removeCredentials(configDir(ctx));
  const file = credentialsPath(configDir(ctx));
  if (ctx.json) ctx.out(JSON.stringify({ removed, file }));
  else ctx.out(removed ? `logged out (removed ${file})` : `not logged in (no ${file})`);
  return EXIT.OK;
}

export async function runWhoami(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {});
  if (values.help) {
    ctx.out(WHOAMI_HELP);
    return EXIT.OK;
  }
  requireToken(ctx);
  const { viewer } = await send(ctx, WhoAmI, {});
  ctx.out(
    ctx.json ? JSON.stringify({ server: ctx.server, viewer }) : `${describe(viewer)}\nserver ${ctx.server}`,
  );
  return EXIT.OK;
}
