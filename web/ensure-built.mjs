// Builds the console (web/dist) when it is missing or older than its sources: `npm start` and the
// browser tests run this first, so a fresh clone needs no extra step. A hash of the sources is kept
// beside the build.

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const web = path.dirname(fileURLToPath(import.meta.url));
const stamp = path.join(web, 'dist', '.source-hash');

function files(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]))
    .sort();
}

/** Files outside web/ that the bundle imports (the CLI's job-file format the YAML editor reads). */
export const OUTSIDE_SOURCES = ['src/cli/tenant/job-file-core.ts'];

export function sourceHash() {
  const h = createHash('sha256');
  for (const f of [
    ...files(path.join(web, 'src')),
    path.join(web, 'index.html'),
    path.join(web, 'vite.config.ts'),
    ...OUTSIDE_SOURCES.map((f) => path.join(web, '..', f)),
  ])
    h.update(path.relative(web, f)).update(fs.readFileSync(f));
  return h.digest('hex');
}

export function ensureBuilt() {
  const hash = sourceHash();
  if (
    fs.existsSync(path.join(web, 'dist', 'index.html')) &&
    fs.existsSync(stamp) &&
    fs.readFileSync(stamp, 'utf8').trim() === hash
  )
    return false;
  const vite = path.join(web, '..', 'node_modules', 'vite', 'bin', 'vite.js');
  const r = spawnSync(
    process.execPath,
    [vite, 'build', '--config', path.join(web, 'vite.config.ts'), '--logLevel', 'warn'],
    {
      stdio: 'inherit',
    },
  );
  if (r.status !== 0) throw new Error('the console build failed');
  fs.writeFileSync(stamp, hash);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    if (ensureBuilt()) console.log('[fairway] console built into web/dist');
  } catch (error) {
    console.error(`[fairway] ${error.message}`);
    process.exit(1);
  }
}
