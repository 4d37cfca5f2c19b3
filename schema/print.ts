/** `npm run schema:print`: writes schema/schema.graphql from the code. A test fails when it drifts. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { printSchema } from 'graphql';
import { schema } from './index.js';

export const schemaFile = path.join(path.dirname(fileURLToPath(import.meta.url)), 'schema.graphql');
export const printedSchema = () => `${printSchema(schema)}\n`;

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  fs.writeFileSync(schemaFile, printedSchema());
  console.log(`Wrote ${path.relative(process.cwd(), schemaFile)}`);
}
