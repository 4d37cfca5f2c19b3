import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const bin = join(root, 'bin', 'fairway.js');

describe('bin/fairway.js (package.json "bin")', () => {
  it('is executable and prints the usage with exit code 0', () => {
    accessSync(bin, constants.X_OK);
    const r = spawnSync(process.execPath, [bin, '--help'], { encoding: 'utf8', cwd: root });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^usage: fairway <command> \[options\]/);
    expect(r.stdout).toContain('convert-philly');
  });
  it('runs subcommands once (not again through the direct-run check) and keeps usage errors at exit 2', () => {
    const h = spawnSync(process.execPath, [bin, 'simulate', '--help'], { encoding: 'utf8', cwd: root });
    expect(h.status).toBe(0);
    expect(h.stdout.match(/^usage: fairway simulate/gm)).toHaveLength(1);
    const bad = spawnSync(process.execPath, [bin, 'simulate', '--trace', 'x', '--trace', 'y'], {
      encoding: 'utf8',
      cwd: root,
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('fairway: --trace given twice\n');
  });
});
