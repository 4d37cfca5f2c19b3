/**
 * Generates a migration for one dialect from the difference between the entities and a
 * database that has every existing migration applied, then rewrites the dialect's
 * index.ts so the new migration is listed.
 *
 *   npm run migration:create -- sqlite
 *   npm run migration:create -- postgresql postgres://127.0.0.1:5432/fairway_scratch
 *
 * The PostgreSQL database given must be a scratch one: it is migrated up first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrate, openDatabase } from '../persistence/orm.js';

const [dialect, url] = process.argv.slice(2);
if (dialect !== 'sqlite' && dialect !== 'postgresql') {
  console.error('usage: migration:create -- sqlite | postgresql <scratch database url>');
  process.exit(2);
}
if (dialect === 'postgresql' && !url) {
  console.error('postgresql needs a scratch database url');
  process.exit(2);
}
const database =
  dialect === 'sqlite'
    ? ({
        dialect,
        file: path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-mig-')), 'scratch.db'),
      } as const)
    : ({ dialect, url: url! } as const);

const orm = await openDatabase({ database });
await migrate(orm);
const migrator = orm.getMigrator();
const folder = path.resolve('migrations', dialect);
const result = await migrator.createMigration(folder, false, false);
if (!result.fileName) {
  console.log('No schema changes: nothing generated.');
} else {
  console.log(`Wrote migrations/${dialect}/${result.fileName}`);
  if (result.code.includes('__temp_alter')) {
    // MikroORM 6's SQLite comparator cannot read back enum CHECK constraints and proposes
    // rebuilding unchanged tables; a rebuild drops the table, which cascades deletes.
    console.warn(
      'WARNING: it rebuilds tables (`__temp_alter`). Remove rebuilds of tables you did not change before committing.',
    );
  }
  writeIndex(folder, dialect);
}
await orm.close(true);

function writeIndex(dir: string, name: string) {
  const files = fs
    .readdirSync(dir)
    .filter((f) => /^Migration\d+.*\.ts$/.test(f))
    .sort();
  const imports = files.map(
    (f, i) => `import { ${className(dir, f)} as M${i} } from './${f.replace(/\.ts$/, '.js')}';`,
  );
  const entries = files.map((f, i) => `  { name: '${f.replace(/\.ts$/, '')}', class: M${i} },`);
  fs.writeFileSync(
    path.join(dir, 'index.ts'),
    `import type { MigrationObject } from '@mikro-orm/core';\n${imports.join('\n')}\n\n` +
      `/** Every ${name} migration, oldest first. Rewritten by \`npm run migration:create\`. */\n` +
      `export const ${name}Migrations: MigrationObject[] = [\n${entries.join('\n')}\n];\n`,
  );
}

function className(dir: string, file: string): string {
  const source = fs.readFileSync(path.join(dir, file), 'utf8');
  const match = /export class (\w+)/.exec(source);
  if (!match) throw new Error(`${file}: no exported migration class`);
  return match[1]!;
}
