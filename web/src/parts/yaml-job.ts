// The job file `fairway submit -f` reads, for the submit page's YAML editor: the CLI's own format module
// (src/cli/tenant/job-file-core.ts: the same fields, checks, line numbers, name resolution, submit input and
// derived idempotency key), with the YAML library and zod. The submit page loads it with the YAML tab, not
// with the console's first script.
import './yaml-jitless.js';
import { stringify } from 'yaml';
import {
  checkJobFile,
  DERIVED_KEY_PREFIX,
  type FileProblem,
  FileProblems,
  idempotencyContent,
  type JobFile,
} from '../../../src/cli/tenant/job-file-core.js';

export {
  type FileProblem,
  type JobFile,
  jobFileInput,
  namesTargets,
  type TargetList,
  TargetProblem,
  targetIdsOf,
} from '../../../src/cli/tenant/job-file-core.js';

export type ReadJob =
  | { ok: true; job: JobFile }
  | { ok: false; syntax: boolean; problems: FileProblem[]; message: string };

/** The text checked as the CLI checks a file: the job, or every problem with its line. */
export function readJob(source: string): ReadJob {
  try {
    return { ok: true, job: checkJobFile(source, 'job.yaml') };
  } catch (error) {
    if (error instanceof FileProblems)
      return { ok: false, syntax: error.syntax, problems: error.problems, message: error.message };
    throw error;
  }
}

/** A job as the YAML of a job file (block style, in the order given). */
export function writeJob(job: Record<string, unknown>): string {
  return stringify(job, { lineWidth: 0 });
}

/**
 * The idempotency key the CLI derives from the same job (same file, same job, whichever submitted it);
 * undefined where the page has no WebCrypto (not a secure context): the job is then sent without one.
 */
export async function derivedKey(job: JobFile): Promise<string | undefined> {
  if (!globalThis.crypto?.subtle) return undefined;
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(idempotencyContent(job)));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${DERIVED_KEY_PREFIX}${hex}`;
}
