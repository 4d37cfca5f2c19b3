// The project CLI's flags (src/cli/fairway.ts): node:util parseArgs with the CLI's own rules,
// and typed reads of the parsed values. A UsageError is a bad command line (exit status 2).
import { type ParseArgsConfig, parseArgs } from 'node:util';

export class UsageError extends Error {}

export type Flags = Map<string, string | true>;

/**
 * Flags by `node:util` parseArgs, with the CLI's own rules on top: `-h` is `--help`; an
 * option is given at most once (booleans may repeat); a value may start with one dash
 * (`--seed -5`) but not two (`--trace --cluster` is a missing value). Options the caller
 * does not know are kept (as strings when followed by a value) so that it can put `--help`
 * before "unknown option".
 */
export function parseFlags(args: string[], strings: readonly string[], booleans: readonly string[]): Flags {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const k of strings) options[k] = { type: 'string' };
  for (const k of booleans) options[k] = { type: 'boolean' };
  options.help = { type: 'boolean', short: 'h' };
  // strict off: parseArgs would refuse `--seed -5` as ambiguous and word errors its own way
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const m: Flags = new Map();
  const set = (key: string, val: string): void => {
    if (m.has(key)) throw new UsageError(`--${key} given twice`);
    m.set(key, val);
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'positional') throw new UsageError(`unexpected argument '${t.value}'`);
    if (t.kind === 'option-terminator') {
      // a bare `--` reads as an option with an empty name, as it always did here
      const next = tokens[i + 1];
      if (next?.kind !== 'positional') throw new UsageError(`-- needs a value`);
      set('', next.value);
      i++;
      continue;
    }
    if (t.rawName !== '-h' && !t.rawName.startsWith('--'))
      throw new UsageError(`unexpected argument '${t.rawName}'`);
    const key = t.name;
    const type = options[key]?.type;
    if (type === 'boolean') {
      if (t.inlineValue) throw new UsageError(`--${key} takes no value`);
      m.set(key, true);
    } else if (type === 'string') {
      if (t.value === undefined || (!t.inlineValue && t.value.startsWith('--')))
        throw new UsageError(`--${key} needs a value`);
      set(key, t.value);
    } else if (t.value !== undefined) {
      set(key, t.value); // unknown, `--key=value`
    } else {
      // unknown, parsed as a boolean: its value is the next argument when that is not an option
      const next = tokens[i + 1];
      if (next?.kind !== 'positional') throw new UsageError(`--${key} needs a value`);
      set(key, next.value);
      i++;
    }
  }
  return m;
}

export function str(f: Flags, k: string): string | undefined {
  const v = f.get(k);
  return typeof v === 'string' ? v : undefined;
}

export function list<T extends string>(f: Flags, k: string, allowed: readonly T[], dflt: T[]): T[] {
  const v = str(f, k);
  if (v === undefined) return dflt;
  const items = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const it of items)
    if (!(allowed as readonly string[]).includes(it))
      throw new UsageError(`--${k}: '${it}' is not one of ${allowed.join(', ')}`);
  if (items.length === 0) throw new UsageError(`--${k} is empty`);
  return [...new Set(items)] as T[];
}

export function int(f: Flags, k: string, dflt: number): number {
  const v = str(f, k);
  if (v === undefined) return dflt;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${k} must be an integer, got '${v}'`);
  return Number(v);
}
