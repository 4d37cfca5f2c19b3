// The CLI's typed operations are only as good as src/cli/tenant/graphql-env.d.ts: it must be
// what gql.tada generates from schema/schema.graphql today, or tsc checks against an old API.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { buildSchema, type DocumentNode, validate } from 'graphql';
import { expect, it } from 'vitest';
import * as operations from '../../src/cli/tenant/operations.js';

it('graphql-env.d.ts matches schema/schema.graphql (else: npm run graphql:env)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-tada-'));
  try {
    const fresh = path.join(dir, 'graphql-env.d.ts');
    // The same command as the npm script, with the output redirected (tsconfig.json names the schema).
    await promisify(execFile)(process.execPath, [
      'node_modules/gql.tada/bin/cli.js',
      'generate',
      'output',
      '--output',
      fresh,
    ]);
    const committed = fs.readFileSync('src/cli/tenant/graphql-env.d.ts', 'utf8');
    expect(
      committed === fs.readFileSync(fresh, 'utf8'),
      'src/cli/tenant/graphql-env.d.ts is stale: run `npm run graphql:env`',
    ).toBe(true);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 30_000);

it('every operation of the CLI is valid against schema/schema.graphql', () => {
  // gql.tada types what a document selects; an unknown field nobody reads would still pass tsc.
  const schema = buildSchema(fs.readFileSync('schema/schema.graphql', 'utf8'));
  const documents = Object.entries(operations).filter(
    (e): e is [string, DocumentNode] => (e[1] as DocumentNode)?.kind === 'Document',
  );
  expect(documents.length).toBeGreaterThanOrEqual(9);
  for (const [name, document] of documents) {
    if (document.definitions.every((d) => d.kind === 'FragmentDefinition')) continue; // checked where it is spread
    expect(
      validate(schema, document).map((e) => e.message),
      name,
    ).toEqual([]);
  }
});
