import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { printedSchema, schemaFile } from '../../schema/print.js';

describe('schema/schema.graphql', () => {
  it('matches the schema built from code (run `npm run schema:print` after changing it)', () => {
    expect(fs.readFileSync(schemaFile, 'utf8')).toBe(printedSchema());
  });
});
