// The tenant CLI's entry: builds the CliContext and dispatches. Light on purpose (fairway.ts and
// the simulator load it): each command module is imported only when that command runs.
import type { Io } from '../io.js';
import { globalFlags } from './args.js';
import { type CliContext, CliError, createCliContext, EXIT } from './context.js';

/** Subcommands served by the tenant CLI (talk to a running gateway). */
export const TENANT_COMMANDS = [
  'login',
  'logout',
  'whoami',
  'submit',
  'ls',
  'watch',
  'logs',
  'cancel',
  'usage',
  'serve',
  'services',
  'apply',
  'audit',
  'quota',
] as const;

export const TENANT_HELP = `tenant commands (talk to a running gateway):
  login            check a token and store it with the server URL for the next commands
  logout           forget them
  whoami           who the server says you are
  submit -f FILE   submit a job from YAML (idempotent: the same file gives the same job)
  ls               list jobs
  watch JOB        follow a job live until it ends
  logs JOB         a job's output (-f: live until it ends; --pod, --pod-set, --tail, --since, --run)
  cancel JOB       cancel a job
  usage            GPU-hours and cost
  serve -f FILE    create an inference service from YAML, or update (roll) the one of that name
                   (--dry-run: would its replicas fit, borrowing, preempting whom)
  services ls      list inference services (also: services scale NAME --min N --max M,
                   services delete NAME)
  apply -f FILE    (platform admins) apply tenants, quotas, flavors, cohorts and queues
  audit            the tenant's audit log, newest first (--platform: every event, platform admins)
  quota requests   list quota requests (also: quota recommendations, quota request ID,
                   quota file --queue NAME --flavor NAME --amount N --reason TEXT,
                   quota withdraw ID; platform admins: quota approve ID, quota reject ID)

  --server URL and --token TOKEN on any of them override FAIRWAY_SERVER, FAIRWAY_TOKEN and the
  login file; --json prints JSON on stdout.

exit status: 0 ok, 1 failed (or the watched job failed/was cancelled), 2 bad flags or file
(nothing sent), 3 not logged in/unauthenticated/forbidden, 4 not found, 5 conflict,
6 rate limited, 7 server unreachable, 8 apply --check found differences, 130 interrupted`;

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** The real stdout for in-place rendering when it is a TTY; null: never (tests). Default process.stdout. */
  stdout?: NodeJS.WriteStream | null;
  stdin?: NodeJS.ReadableStream;
  /** Stops a running command (tests); by default Ctrl-C does. */
  signal?: AbortSignal;
}

type Command = (argv: string[], ctx: CliContext) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  login: async () => (await import('./login.js')).runLogin,
  logout: async () => (await import('./login.js')).runLogout,
  whoami: async () => (await import('./login.js')).runWhoami,
  submit: async () => (await import('./submit.js')).runSubmit,
  ls: async () => (await import('./ls.js')).runLs,
  watch: async () => (await import('./watch.js')).runWatch,
  logs: async () => (await import('./logs.js')).runLogs,
  cancel: async () => (await import('./cancel.js')).runCancel,
  usage: async () => (await import('./usage.js')).runUsage,
  serve: async () => (await import('./serve.js')).runServe,
  services: async () => (await import('./services.js')).runServices,
  audit: async () => (await import('./audit.js')).runAudit,
  quota: async () => (await import('./quota.js')).runQuota,
  apply: async () => {
    // A variable specifier: tsc does not require the module, so this builds with or without apply.ts.
    const specifier: string = './apply.js';
    const mod = (await import(specifier)) as { runApply(argv: string[], ctx: CliContext): Promise<number> };
    return mod.runApply;
  },
};

export async function runTenantCommand(
  cmd: string,
  argv: string[],
  io: Io,
  options: RunOptions = {},
): Promise<number> {
  const load = COMMANDS[cmd];
  if (!load) {
    io.err(`fairway: unknown command '${cmd}'`);
    return EXIT.USAGE;
  }
  // Ctrl-C aborts the command (a request in flight, a watch) so it can end cleanly with 130.
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  if (options.signal) options.signal.addEventListener('abort', onSigint, { once: true });
  else process.once('SIGINT', onSigint);
  try {
    const { rest, ...flags } = globalFlags(argv);
    const ctx = await createCliContext({
      io,
      env: options.env ?? process.env,
      flags,
      stdout: options.stdout === undefined ? process.stdout : options.stdout,
      stdin: options.stdin ?? process.stdin,
      signal: controller.signal,
    });
    return await (await load())(cmd === 'apply' ? rest : argv, ctx);
  } catch (error) {
    if (error instanceof CliError) {
      io.err(`fairway ${cmd}: ${error.message}`);
      return error.exitCode;
    }
    // Never a stack trace: one line, and the exit status says it failed.
    io.err(`fairway ${cmd}: unexpected error: ${(error as Error)?.message ?? String(error)}`);
    return EXIT.FAILURE;
  } finally {
    process.removeListener('SIGINT', onSigint);
    options.signal?.removeEventListener('abort', onSigint);
  }
}
