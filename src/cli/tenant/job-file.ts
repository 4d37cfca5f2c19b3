// A job file (YAML) checked before anything is sent: syntax and shape errors name file:line. The format
// itself is job-file-core.ts (pure: the web console's YAML editor reads the same files).
import { createHash } from 'node:crypto';
import type { z } from 'zod';
import { CliError, EXIT } from './context.js';
import {
  checkYamlFile,
  DERIVED_KEY_PREFIX,
  FileProblems,
  idempotencyContent,
  type JobFile,
  JobFileSchema,
} from './job-file-core.js';

export { type JobFile, JobFileSchema, TargetFields } from './job-file-core.js';

/** Parses and validates; throws CliError(USAGE) listing every problem as file:line: path: message. */
export function parseJobFile(source: string, file: string): JobFile {
  return parseYamlFile(source, file, JobFileSchema, 'job');
}

/**
 * A YAML file checked against `schema` (strict objects: an unknown key is named with its line);
 * throws CliError(USAGE) listing every problem as file:line: path: message. `what` names the
 * file's kind in the first line ("is not a valid job").
 */
export function parseYamlFile<S extends z.ZodType>(
  source: string,
  file: string,
  schema: S,
  what: string,
): z.infer<S> {
  try {
    return checkYamlFile(source, file, schema, what);
  } catch (error) {
    if (error instanceof FileProblems) throw new CliError(error.message, EXIT.USAGE);
    throw error;
  }
}

/** Same content, same key: a key order, comment or whitespace change does not make a new job. */
export function idempotencyKeyOf(job: JobFile): string {
  return `${DERIVED_KEY_PREFIX}${createHash('sha256').update(idempotencyContent(job)).digest('hex')}`;
}
