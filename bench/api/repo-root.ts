import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is bench/api/repo-root.ts): cwd of the servers and of git. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
