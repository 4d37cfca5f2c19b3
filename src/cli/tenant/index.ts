// STUB (lead): the CLI helper replaces this file.
import type { Io } from '../fairway.js';

/** Subcommands served by the tenant CLI (talk to a running gateway). */
export const TENANT_COMMANDS = ['login', 'logout', 'whoami', 'submit', 'ls', 'watch', 'cancel', 'usage', 'apply'] as const;

export const TENANT_HELP = `tenant commands (talk to a running gateway):
  login            store a server URL and token for the next commands
  submit -f FILE   submit a job from YAML
  ls               list jobs
  watch JOB        follow a job live
  cancel JOB       cancel a job
  usage            GPU-hours and cost
  apply -f FILE    (platform admins) apply tenants, quotas, flavors, cohorts and queues`;

export async function runTenantCommand(cmd: string, _argv: string[], io: Io): Promise<number> {
  io.err(`fairway: '${cmd}' is not available yet`);
  return 2;
}
