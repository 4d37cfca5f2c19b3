import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configurationDoc, configurationDocFile } from '../../src/config/doc.js';
import { DOCUMENTED_SECTIONS } from '../../src/config/index.js';

describe('docs/configuration.md', () => {
  it('matches the configuration sections (run `npm run config:doc` after changing them)', () => {
    expect(fs.readFileSync(configurationDocFile, 'utf8')).toBe(configurationDoc());
  });

  it('lists every variable once, each with its description', () => {
    const text = configurationDoc();
    const names = DOCUMENTED_SECTIONS.flatMap((s) => Object.keys(s.variables));
    expect(new Set(names).size).toBe(names.length);
    for (const name of names)
      expect(text.match(new RegExp(`^\\| \`${name}\` \\|`, 'gm')), name).toHaveLength(1);
  });
});
