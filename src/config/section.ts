/**
 * The building blocks of the configuration sections (src/config/sections/*.ts): a section is
 * one zod object over the environment variables it owns, each with its `.describe()` text
 * (what docs/configuration.md shows), and a `resolve` step that turns the parsed values into
 * the section's settings, every default applied. This folder imports nothing of the
 * application: only node builtins and zod.
 */
import { z } from 'zod';

export type NodeEnv = 'development' | 'production' | 'test';

/** What a section may know of the others while it resolves (computed first, from the same variables). */
export interface LoadContext {
  /** NODE_ENV (development when unset; when invalid, its problem is reported by the server section). */
  readonly nodeEnv: NodeEnv;
  /** FAIRWAY_DATA_DIR, resolved to an absolute path. */
  readonly dataDir: string;
  /** Whether the demo is on (FAIRWAY_DEMO, or its default for NODE_ENV). */
  readonly demo: boolean;
  /** Reports a problem with a variable; all of them, of every section, are thrown together. */
  problem(variable: string, message: string): void;
}

export type Variables = Record<string, z.ZodType>;

export interface SectionDefinition<V extends Variables, T> {
  /** The section's key in the loaded configuration (`config.rateLimits`…). */
  readonly key: string;
  /** The heading in docs/configuration.md. */
  readonly title: string;
  /** The paragraph under that heading. */
  readonly description: string;
  /** The environment variables this section reads, in the order they are documented. */
  readonly variables: V;
  /** The section's settings from the parsed values; problems found across variables go to `ctx.problem`. */
  resolve(values: z.output<z.ZodObject<V>>, ctx: LoadContext): T;
}

export interface Section<V extends Variables = Variables, T = unknown> extends SectionDefinition<V, T> {
  readonly schema: z.ZodObject<V>;
}

export function section<V extends Variables, T>(definition: SectionDefinition<V, T>): Section<V, T> {
  return { ...definition, schema: z.object(definition.variables) };
}

/**
 * Documentation a variable's schema carries besides its `.describe()` text, for
 * docs/configuration.md: `typeText` and `defaultText` when the schema alone cannot say it
 * (a default that depends on NODE_ENV, a list), `flag` for booleans.
 */
export interface VariableDoc {
  typeText?: string;
  defaultText?: string;
  flag?: boolean;
}

export function docOf(schema: z.ZodType): VariableDoc & { description?: string } {
  return (schema.meta() ?? {}) as VariableDoc & { description?: string };
}

const TRUE_SPELLINGS = ['true', '1', 'yes', 'on'] as const;
const FALSE_SPELLINGS = ['false', '0', 'no', 'off'] as const;
/** Still accepted, with a warning: every boolean is spelled `true` or `false`. */
export const DEPRECATED_FLAG_SPELLINGS: ReadonlySet<string> = new Set(['1', '0', 'yes', 'no', 'on', 'off']);

const flagValue = () =>
  z
    .enum([...TRUE_SPELLINGS, ...FALSE_SPELLINGS], { error: 'must be true or false' })
    .transform((v) => (TRUE_SPELLINGS as readonly string[]).includes(v));

/** A boolean variable with a fixed default. */
export function flag(description: string, fallback: boolean) {
  return flagValue()
    .default(fallback)
    .describe(description)
    .meta({ flag: true, typeText: '`true`, `false`' } satisfies VariableDoc);
}

/** A boolean variable whose default depends on something else (NODE_ENV): `resolve` applies it. */
export function optionalFlag(description: string, defaultText: string) {
  return flagValue()
    .optional()
    .describe(description)
    .meta({ flag: true, typeText: '`true`, `false`', defaultText } satisfies VariableDoc);
}

/** What the deprecated spelling of a boolean means, for the warning. */
export function flagSpellingWarning(variable: string, raw: string): string {
  const meant = (TRUE_SPELLINGS as readonly string[]).includes(raw) ? 'true' : 'false';
  return `${variable}: "${raw}" is deprecated, write ${variable}=${meant} (booleans are true or false; 1/0, yes/no and on/off will stop being accepted)`;
}

/** A duration in milliseconds: long enough to be meaningful, short enough to still fail fast. */
export const millis = (min: number, max: number) =>
  z.coerce
    .number()
    .int('must be a whole number of milliseconds')
    .min(min, `must be at least ${min} ms`)
    .max(max, `must be at most ${max} ms`);

/** The configuration as every module gets it: nothing in it can be changed. */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer U)[]
    ? readonly DeepReadonly<U>[]
    : T extends object
      ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
      : T;

export function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value as DeepReadonly<T>;
}
