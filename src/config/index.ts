/**
 * Every setting Fairway reads from the environment, validated once at start: `load()` parses
 * each section (src/config/sections/*.ts), applies every default, reports every problem of
 * every section together in one ConfigError, and returns a deeply frozen object. Modules get
 * their section (`config.rateLimits`, `config.webSocket`…), never the environment. Files the
 * configuration names (the persisted-operations manifest, the Kubernetes settings) are read
 * by the module that uses them, when it starts.
 *
 * This folder imports nothing of the application (only node builtins and zod): the server
 * depends on it, never the other way round. docs/configuration.md is generated from these
 * sections (`npm run config:doc`).
 */
import path from 'node:path';
import type { z } from 'zod';
import { ConfigError } from './errors.js';
import {
  DEPRECATED_FLAG_SPELLINGS,
  type DeepReadonly,
  deepFreeze,
  docOf,
  flagSpellingWarning,
  type LoadContext,
  type Section,
} from './section.js';
import { type AuthConfig, authSection } from './sections/auth.js';
import { type BackendConfig, backendSection } from './sections/backend.js';
import { cliSection } from './sections/cli.js';
import { type DatabaseSettings, databaseSection } from './sections/database.js';
import { type DemoConfig, demoEnabled, demoSection } from './sections/demo.js';
import { type ExecutionConfig, executionSection } from './sections/execution.js';
import { type GovernanceConfig, governanceSection } from './sections/governance.js';
import { type HttpConfig, httpSection } from './sections/http.js';
import { type InferenceConfig, inferenceSection } from './sections/inference.js';
import { limitsSection, type QueryLimits } from './sections/limits.js';
import { type LogsConfig, logsSection } from './sections/logs.js';
import { type MeteringConfig, meteringSection } from './sections/metering.js';
import { type ObservabilityConfig, observabilitySection } from './sections/observability.js';
import { type RateLimitConfig, rateLimitsSection } from './sections/rate-limits.js';
import { type SchedulingConfig, schedulingSection } from './sections/scheduling.js';
import { type ServerConfig, serverSection } from './sections/server.js';
import { type WebSocketConfig, webSocketSection } from './sections/websocket.js';

export { ConfigError } from './errors.js';
export type { DeepReadonly, NodeEnv } from './section.js';
export * from './sections/auth.js';
export * from './sections/backend.js';
export * from './sections/database.js';
export * from './sections/demo.js';
export * from './sections/execution.js';
export * from './sections/governance.js';
export * from './sections/http.js';
export * from './sections/inference.js';
export * from './sections/limits.js';
export * from './sections/logs.js';
export * from './sections/metering.js';
export * from './sections/observability.js';
export * from './sections/rate-limits.js';
export * from './sections/scheduling.js';
export * from './sections/server.js';
export * from './sections/websocket.js';

/** The configuration before it is frozen: one key per section, plus the warnings. */
export interface ResolvedConfig {
  server: ServerConfig;
  database: DatabaseSettings;
  auth: AuthConfig;
  limits: QueryLimits;
  execution: ExecutionConfig;
  rateLimits: RateLimitConfig;
  webSocket: WebSocketConfig;
  http: HttpConfig;
  observability: ObservabilityConfig;
  scheduling: SchedulingConfig;
  metering: MeteringConfig;
  governance: GovernanceConfig;
  logs: LogsConfig;
  inference: InferenceConfig;
  backend: BackendConfig;
  demo: DemoConfig;
  /** Settings that work but will not for long (deprecated boolean spellings): src/main.ts prints them once
   * at start.
   */
  warnings: string[];
}

/** What `load()` returns: every section resolved, nothing optional that has a default, nothing writable. */
export type FairwayConfig = DeepReadonly<ResolvedConfig>;

/** The server's sections, in the order they are loaded and documented. */
export const SECTIONS: readonly Section[] = [
  serverSection,
  databaseSection,
  authSection,
  limitsSection,
  executionSection,
  rateLimitsSection,
  webSocketSection,
  httpSection,
  observabilitySection,
  schedulingSection,
  meteringSection,
  governanceSection,
  logsSection,
  inferenceSection,
  backendSection,
  demoSection,
];

/** Everything docs/configuration.md lists: the server's sections, then the command-line tools' variables
 * (never loaded by the server).
 */
export const DOCUMENTED_SECTIONS: readonly Section[] = [...SECTIONS, cliSection];

const issueText = (issue: z.core.$ZodIssue) => `${String(issue.path[0] ?? 'environment')}: ${issue.message}`;

/** Deprecated spellings of this section's booleans in the environment. */
function flagWarnings(section: Section, env: NodeJS.ProcessEnv): string[] {
  return Object.entries(section.variables).flatMap(([name, schema]) => {
    const raw = env[name];
    return docOf(schema).flag && raw !== undefined && DEPRECATED_FLAG_SPELLINGS.has(raw)
      ? [flagSpellingWarning(name, raw)]
      : [];
  });
}

/** Reads the configuration from the environment. Throws one ConfigError listing every problem found. */
export function load(env: NodeJS.ProcessEnv = process.env): FairwayConfig {
  const problems: string[] = [];
  const warnings: string[] = [];
  // What other sections' defaults depend on, from the same variables (their own problems are reported below).
  const server = serverSection.variables;
  const nodeEnv = server.NODE_ENV.safeParse(env.NODE_ENV).data ?? server.NODE_ENV.parse(undefined);
  const dataDir = path.resolve(
    server.FAIRWAY_DATA_DIR.safeParse(env.FAIRWAY_DATA_DIR).data ?? server.FAIRWAY_DATA_DIR.parse(undefined),
  );
  const demo = demoEnabled(demoSection.variables.FAIRWAY_DEMO.safeParse(env.FAIRWAY_DEMO).data, nodeEnv);
  const ctx: LoadContext = {
    nodeEnv,
    dataDir,
    demo,
    problem: (variable, message) => problems.push(`${variable}: ${message}`),
  };

  const resolved: Record<string, unknown> = {};
  for (const section of SECTIONS) {
    warnings.push(...flagWarnings(section, env));
    const parsed = section.schema.safeParse(env);
    if (parsed.success) resolved[section.key] = section.resolve(parsed.data, ctx);
    else problems.push(...parsed.error.issues.map(issueText));
  }
  if (problems.length) throw new ConfigError(problems);
  return deepFreeze({ ...resolved, warnings } as unknown as ResolvedConfig);
}
