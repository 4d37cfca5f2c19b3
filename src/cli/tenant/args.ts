// Flags for the tenant commands: node:util parseArgs (strict), its errors turned into usage errors.
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { CliError, EXIT } from './context.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** Flags every command takes (the context reads --server/--token before the command runs). */
export const COMMON_OPTIONS = {
  server: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies Options;

export const COMMON_HELP = `  --server URL       gateway (default: FAIRWAY_SERVER, the login file, http://localhost:4000/graphql)
  --token TOKEN      API token (default: FAIRWAY_TOKEN, the login file)
  -h, --help         this help`;

export function parse<O extends Options>(argv: string[], options: O, positionals = 0) {
  const config = {
    args: argv,
    options: { ...COMMON_OPTIONS, ...options },
    strict: true as const,
    allowPositionals: true as const,
  };
  let parsed: ReturnType<typeof parseArgs<typeof config>>;
  try {
    parsed = parseArgs(config);
  } catch (error) {
    // parseArgs words its errors well but goes on to suggest `--` tricks; keep the first sentence
    throw new CliError((error as Error).message.split('. ')[0]!.replace(/\.$/, ''), EXIT.USAGE);
  }
  if (!(parsed.values as { help?: boolean }).help && parsed.positionals.length > positionals)
    throw new CliError(`unexpected argument '${parsed.positionals[positionals]}'`, EXIT.USAGE);
  return parsed;
}

/**
 * Reads --server and --token (`--x v` or `--x=v`) and --json for the context. `rest` is argv
 * without --server/--token, for commands whose parser does not know them (apply); ours parse
 * the full argv with COMMON_OPTIONS.
 */
export function globalFlags(argv: string[]): {
  server?: string;
  token?: string;
  json: boolean;
  rest: string[];
} {
  const out: { server?: string; token?: string; json: boolean; rest: string[] } = { json: false, rest: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      out.rest.push(...argv.slice(i));
      break;
    }
    if (a === '--json') out.json = true;
    const key = (['server', 'token'] as const).find((k) => a === `--${k}` || a.startsWith(`--${k}=`));
    if (key && a.includes('=')) out[key] = a.slice(key.length + 3);
    else if (key && argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--')) out[key] = argv[++i]!;
    else out.rest.push(a); // a flag without its value stays, for the command's parser to refuse
  }
  return out;
}

export function need(value: string | undefined, what: string): string {
  if (value === undefined || value === '') throw new CliError(`${what} is required (see --help)`, EXIT.USAGE);
  return value;
}

export function positiveInt(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw new CliError(`${flag} must be a positive integer, got '${value}'`, EXIT.USAGE);
  return Number(value);
}

/** A 0-based index flag (e.g. --pod): undefined when not given. */
export function nonNegativeInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new CliError(`${flag} must be an integer, 0 or more, got '${value}'`, EXIT.USAGE);
  return Number(value);
}
