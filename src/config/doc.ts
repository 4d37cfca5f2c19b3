/**
 * `npm run config:doc`: writes docs/configuration.md from the configuration sections
 * (src/config/sections/*.ts): one table per section, each variable's type, default and its
 * `.describe()` text. test/config/configuration-doc.test.ts fails when the file is stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DOCUMENTED_SECTIONS } from './index.js';
import { docOf, type Section } from './section.js';

export const configurationDocFile = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../docs/configuration.md',
);

interface JsonSchema {
  type?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  format?: string;
  default?: unknown;
}

const code = (value: unknown) => `\`${String(value)}\``;
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function typeOf(json: JsonSchema): string {
  if (json.enum) return json.enum.map(code).join(', ');
  if (json.type === 'integer' || json.type === 'number') {
    const bounds: string[] = [];
    if (json.minimum !== undefined && json.maximum !== undefined)
      bounds.push(`${json.minimum}–${json.maximum}`);
    else {
      if (json.minimum !== undefined) bounds.push(`≥ ${json.minimum}`);
      if (json.exclusiveMinimum !== undefined) bounds.push(`> ${json.exclusiveMinimum}`);
      if (json.maximum !== undefined) bounds.push(`≤ ${json.maximum}`);
      if (json.exclusiveMaximum !== undefined) bounds.push(`< ${json.exclusiveMaximum}`);
    }
    return [json.type, ...bounds].join(', ');
  }
  if (json.format === 'uri') return 'URL';
  return json.type ?? 'string';
}

/** The value of a `.default(…)`, which JSON Schema leaves out when a transform comes before it. */
function defaultOf(schema: z.ZodType, json: JsonSchema): unknown {
  if (json.default !== undefined) return json.default;
  const def = schema._zod.def as { type: string; defaultValue?: unknown };
  return def.type === 'default' ? def.defaultValue : undefined;
}

function row(name: string, schema: z.ZodType): string {
  const doc = docOf(schema);
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const type = doc.typeText ?? typeOf(json);
  const value = defaultOf(schema, json);
  const fallback = doc.defaultText ?? (value !== undefined ? code(value) : 'unset');
  if (!doc.description) throw new Error(`${name} has no .describe() text`);
  return `| \`${name}\` | ${cell(type)} | ${cell(fallback)} | ${cell(doc.description)} |`;
}

/** GitHub's heading anchors. */
const anchor = (title: string) =>
  title
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .trim()
    .replace(/\s/g, '-');

function sectionDoc(section: Section): string {
  return [
    `## ${section.title}`,
    '',
    section.description,
    '',
    '| variable | type | default | description |',
    '| --- | --- | --- | --- |',
    ...Object.entries(section.variables).map(([name, schema]) => row(name, schema)),
  ].join('\n');
}

/** The text of docs/configuration.md. */
export function configurationDoc(): string {
  const count = DOCUMENTED_SECTIONS.reduce((n, s) => n + Object.keys(s.variables).length, 0);
  return `${[
    '# Configuration',
    '',
    '<!-- Generated from src/config/sections/*.ts by `npm run config:doc`: edit the sections, not this file (test/config/configuration-doc.test.ts fails when it is stale). -->',
    '',
    `Fairway reads ${count} environment variables, validated when it starts: a bad value stops the server with one message listing every problem, each naming its variable. Unset variables take the default shown. Booleans are \`true\` or \`false\`; \`1\`/\`0\`, \`yes\`/\`no\` and \`on\`/\`off\` are still accepted, with a deprecation warning printed at start.`,
    '',
    DOCUMENTED_SECTIONS.map((s) => `- [${s.title}](#${anchor(s.title)})`).join('\n'),
    '',
    DOCUMENTED_SECTIONS.map(sectionDoc).join('\n\n'),
  ].join('\n')}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  fs.mkdirSync(path.dirname(configurationDocFile), { recursive: true });
  fs.writeFileSync(configurationDocFile, configurationDoc());
  console.log(`Wrote ${path.relative(process.cwd(), configurationDocFile)}`);
}
