import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { DEFAULT_LOG_ARCHIVE_BYTES as SIMULATED_LOG_ARCHIVE_BYTES } from '../../src/backends/simulated/logs.js';
import {
  ConfigError,
  DEFAULT_CONCURRENCY,
  DEFAULT_CONTROLLER_WINDOW_MS,
  DEFAULT_CYCLE_SLICE_MS,
  DEFAULT_DATABASE_TIMEOUTS,
  DEFAULT_GROUP_COMMIT_MS,
  DEFAULT_LOG_ARCHIVE_KIB,
  DEFAULT_PROBE_INTERVAL_MS,
  DEFAULT_PROBE_RETENTION_HOURS,
  DEFAULT_QUERY_LIMITS,
  DEFAULT_QUOTA_REQUEST_INTERVAL_MS,
  DEFAULT_WEBSOCKET_CONFIG,
  load,
  SECTIONS,
} from '../../src/config/index.js';
import { docOf } from '../../src/config/section.js';
import { DEFAULT_CONTROLLER_WINDOW_MS as SERVICE_CONTROLLER_WINDOW_MS } from '../../src/services/governance/controller-settings.js';
import {
  DEFAULT_PROBE_INTERVAL_MS as SERVICE_PROBE_INTERVAL_MS,
  DEFAULT_PROBE_RETENTION_HOURS as SERVICE_PROBE_RETENTION_HOURS,
} from '../../src/services/governance/probes.js';
import { DEFAULT_QUOTA_REQUEST_INTERVAL_MS as SERVICE_QUOTA_REQUEST_INTERVAL_MS } from '../../src/services/governance/quota-expiry.js';
import { DEFAULT_CYCLE_SLICE_MS as SERVICE_CYCLE_SLICE_MS } from '../../src/services/scheduling/leader-cycles.js';

const problemsOf = (env: NodeJS.ProcessEnv): string[] => {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error(`accepted ${JSON.stringify(env)}`);
};

describe('configuration from the environment', () => {
  it('defaults to SQLite in ./data on port 4000 with the demo on', () => {
    const config = load({});
    expect(config.server.port).toBe(4000);
    expect(config.database).toEqual({
      dialect: 'sqlite',
      file: path.resolve('data/fairway.db'),
      synchronous: 'normal',
      timeouts: DEFAULT_DATABASE_TIMEOUTS,
    });
    expect(config.demo.enabled).toBe(true);
    expect(config.auth.oidc).toBeUndefined();
  });

  it('picks PostgreSQL from a postgres URL', () => {
    expect(load({ DATABASE_URL: 'postgres://u@h:5432/db' }).database).toEqual({
      dialect: 'postgresql',
      url: 'postgres://u@h:5432/db',
      timeouts: DEFAULT_DATABASE_TIMEOUTS,
    });
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ DATABASE_URL: 'mysql://u:secret@h/db' }, /DATABASE_URL.*not supported/],
    [{ REDIS_URL: 'localhost:6379' }, /REDIS_URL: must start with redis:\/\//],
    [{ OIDC_ISSUER: 'https://idp.example' }, /OIDC_JWKS_URL: OIDC_ISSUER is set/],
    [{ OIDC_JWKS_URL: 'https://idp.example/jwks' }, /OIDC_ISSUER: set OIDC_ISSUER/],
    [{ FAIRWAY_DEMO: 'maybe' }, /FAIRWAY_DEMO/],
  ])('%o is refused with a message naming the setting', (env, message) => {
    expect(() => load(env)).toThrow(ConfigError);
    expect(() => load(env)).toThrow(message);
  });

  it('never echoes a database password', () => {
    expect(problemsOf({ DATABASE_URL: 'mysql://u:hunter2@h/db' }).join('\n')).not.toContain('hunter2');
  });
});

describe('every section resolved, defaults applied once', () => {
  it('development (NODE_ENV unset)', () => {
    const dataDir = path.resolve('data');
    expect(load({})).toEqual({
      server: {
        env: 'development',
        port: 4000,
        host: '0.0.0.0',
        dataDir,
        graphiql: true,
        readyTimeoutMs: 500,
        redisUrl: undefined,
      },
      database: {
        dialect: 'sqlite',
        file: path.join(dataDir, 'fairway.db'),
        synchronous: 'normal',
        timeouts: { connectMs: 3000, acquireMs: 3000, statementMs: 4000 },
      },
      auth: { oidc: undefined, identityCacheMs: 5000 },
      limits: { ...DEFAULT_QUERY_LIMITS, introspection: true, fieldSuggestions: true },
      execution: { jit: true },
      rateLimits: {
        enabled: true,
        principal: { perSecond: 150, burst: 600 },
        tenant: { perSecond: 450, burst: 1800 },
        anonymousPerMinute: 300,
        authFailuresPerMinute: 20,
        trustProxyHops: 0,
        keyPrefix: 'fairway:rate',
        concurrency: DEFAULT_CONCURRENCY,
      },
      webSocket: DEFAULT_WEBSOCKET_CONFIG,
      http: { corsOrigins: [], csrfHeaders: ['x-graphql-yoga-csrf'], hsts: false, persistedOperations: null },
      observability: { logLevel: 'warn', tracing: null, metricsToken: undefined },
      scheduling: {
        cycleSliceMs: DEFAULT_CYCLE_SLICE_MS,
        disruptionBackoffMs: 5000,
        disruptionBackoffMaxMs: 300_000,
        groupCommitMs: DEFAULT_GROUP_COMMIT_MS,
      },
      // The demo is on: usage is written every 15 s so its cost shows within the first minute.
      metering: { intervalMs: 15_000, currency: 'USD' },
      governance: {
        quotaRequestIntervalMs: DEFAULT_QUOTA_REQUEST_INTERVAL_MS,
        idleCheckIntervalMs: 60_000,
        controllerWindowMs: DEFAULT_CONTROLLER_WINDOW_MS,
        probes: {
          intervalMs: DEFAULT_PROBE_INTERVAL_MS,
          retentionHours: DEFAULT_PROBE_RETENTION_HOURS,
          pollMs: 30_000,
          prometheusUrl: undefined,
        },
      },
      logs: { archiveBytes: 1024 * 1024, retentionDays: 30, followBufferLines: 10_000, followFlushMs: 100 },
      inference: { intervalMs: 15_000 },
      backend: {
        kind: 'simulated',
        simulatedTimeScale: 60,
        kubernetes: { kubeconfigPath: undefined, settingsFile: undefined, startupTimeoutMs: 30_000 },
      },
      demo: { enabled: true, trickle: true },
      warnings: [],
    });
  });

  it('production: the demo, GraphiQL, introspection and suggestions off, logs at info, metering every minute; nothing else changes', () => {
    const production = load({ NODE_ENV: 'production' });
    const development = load({});
    expect(production.server).toEqual({ ...development.server, env: 'production', graphiql: false });
    expect(production.limits).toEqual({
      ...development.limits,
      introspection: false,
      fieldSuggestions: false,
    });
    expect(production.observability.logLevel).toBe('info');
    expect(production.metering.intervalMs).toBe(60_000);
    expect(production.demo).toEqual({ enabled: false, trickle: false });
    for (const key of [
      'database',
      'auth',
      'rateLimits',
      'webSocket',
      'http',
      'scheduling',
      'governance',
      'backend',
    ] as const)
      expect(production[key], key).toEqual(development[key]);
  });

  it('NODE_ENV=test only lowers the log level: the rate limits and every other section are production-like', () => {
    const test = load({ NODE_ENV: 'test' });
    const development = load({});
    expect(test.observability.logLevel).toBe('error');
    expect(test.rateLimits).toEqual(development.rateLimits);
    expect(test.webSocket).toEqual(development.webSocket);
  });

  it('every section is in the result, under its key', () => {
    const config = load({});
    expect(Object.keys(config).sort()).toEqual([...SECTIONS.map((s) => s.key), 'warnings'].sort());
  });

  it("the services' own fallbacks (for callers without a configuration) equal the configuration's defaults", () => {
    expect(SERVICE_CYCLE_SLICE_MS).toBe(DEFAULT_CYCLE_SLICE_MS);
    expect(SERVICE_QUOTA_REQUEST_INTERVAL_MS).toBe(DEFAULT_QUOTA_REQUEST_INTERVAL_MS);
    expect(SERVICE_PROBE_INTERVAL_MS).toBe(DEFAULT_PROBE_INTERVAL_MS);
    expect(SERVICE_PROBE_RETENTION_HOURS).toBe(DEFAULT_PROBE_RETENTION_HOURS);
    expect(SERVICE_CONTROLLER_WINDOW_MS).toBe(DEFAULT_CONTROLLER_WINDOW_MS);
    expect(SIMULATED_LOG_ARCHIVE_BYTES).toBe(DEFAULT_LOG_ARCHIVE_KIB * 1024);
  });
});

describe('problems', () => {
  it('of several sections are reported together, in one ConfigError', () => {
    const problems = problemsOf({ PORT: 'eighty', FAIRWAY_WS_MAX_BUFFERED_BYTES: 'lots' });
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^PORT: /);
    expect(problems[1]).toBe(
      'FAIRWAY_WS_MAX_BUFFERED_BYTES: must be a whole number of at least 1 (got "lots")',
    );
  });

  it('found across variables are reported with the others', () => {
    const problems = problemsOf({
      FAIRWAY_RATE_TENANT_BURST: '10',
      OIDC_ISSUER: 'https://idp.example',
      LOG_LEVEL: 'verbose',
      FAIRWAY_PERSISTED_OPERATIONS_MODE: 'only',
    });
    expect(problems).toEqual([
      'OIDC_JWKS_URL: OIDC_ISSUER is set: also set OIDC_JWKS_URL or OIDC_PUBLIC_KEY so tokens can be verified',
      'FAIRWAY_RATE_TENANT_BURST: must be at least FAIRWAY_RATE_TENANT_PER_SECOND (450)',
      'FAIRWAY_PERSISTED_OPERATIONS_MODE: set FAIRWAY_PERSISTED_OPERATIONS to the manifest file too',
      'LOG_LEVEL: "verbose" is not one of fatal, error, warn, info, debug, trace, silent',
    ]);
    expect(() => load({ PORT: 'x', LOG_LEVEL: 'y' })).toThrow(
      /^Invalid configuration:\n {2}- PORT: .*\n {2}- LOG_LEVEL: /,
    );
  });

  it('are not the files the configuration names: those are read by the module that uses them, at start', () => {
    const missing = path.join(import.meta.dirname, 'no-such-file.json');
    expect(fs.existsSync(missing)).toBe(false);
    const config = load({
      FAIRWAY_PERSISTED_OPERATIONS: missing,
      FAIRWAY_BACKEND: 'kubernetes',
      FAIRWAY_KUBERNETES_SETTINGS: missing,
      FAIRWAY_KUBECONFIG: missing,
    });
    expect(config.http.persistedOperations).toEqual({ file: missing, mode: 'allow' });
    expect(config.backend.kubernetes).toMatchObject({ settingsFile: missing, kubeconfigPath: missing });
  });
});

describe('booleans', () => {
  const flags = SECTIONS.flatMap((s) =>
    Object.entries(s.variables)
      .filter(([, schema]) => docOf(schema).flag)
      .map(([name]) => name),
  );

  it('are every flag the sections declare', () => {
    expect(flags.sort()).toEqual([
      'FAIRWAY_DEMO',
      'FAIRWAY_DEMO_TRICKLE',
      'FAIRWAY_FIELD_SUGGESTIONS',
      'FAIRWAY_GRAPHIQL',
      'FAIRWAY_GRAPHQL_JIT',
      'FAIRWAY_HSTS',
      'FAIRWAY_INTROSPECTION',
      'FAIRWAY_RATE_LIMITS',
    ]);
  });

  it('are spelled true or false, without a warning', () => {
    for (const name of flags) {
      expect(load({ [name]: 'true' }).warnings, name).toEqual([]);
      expect(load({ [name]: 'false' }).warnings, name).toEqual([]);
    }
    expect(load({ FAIRWAY_HSTS: 'true' }).http.hsts).toBe(true);
    expect(load({ FAIRWAY_RATE_LIMITS: 'false' }).rateLimits.enabled).toBe(false);
  });

  it.each([
    ['1', true],
    ['yes', true],
    ['on', true],
    ['0', false],
    ['no', false],
    ['off', false],
  ])(
    '%s is still accepted (%s), with a deprecation warning naming the variable and the spelling to use',
    (spelling, meaning) => {
      const warn = vi.spyOn(console, 'warn');
      try {
        for (const name of flags) {
          const config = load({ [name]: spelling });
          expect(config.warnings, name).toEqual([
            `${name}: "${spelling}" is deprecated, write ${name}=${meaning} (booleans are true or false; 1/0, yes/no and on/off will stop being accepted)`,
          ]);
        }
        const config = load({
          FAIRWAY_HSTS: spelling,
          FAIRWAY_RATE_LIMITS: spelling,
          FAIRWAY_DEMO: spelling,
          FAIRWAY_INTROSPECTION: spelling,
        });
        expect([
          config.http.hsts,
          config.rateLimits.enabled,
          config.demo.enabled,
          config.limits.introspection,
        ]).toEqual([meaning, meaning, meaning, meaning]);
        expect(config.warnings).toHaveLength(4);
        // load() only collects them: src/main.ts prints them once.
        expect(warn).not.toHaveBeenCalled();
      } finally {
        warn.mockRestore();
      }
    },
  );

  it('anything else is refused', () => {
    for (const bad of ['TRUE', 'maybe', 'y', ''])
      expect(problemsOf({ FAIRWAY_HSTS: bad }), bad).toEqual(['FAIRWAY_HSTS: must be true or false']);
  });
});

describe('the loaded configuration', () => {
  it('is frozen, all the way down', () => {
    const config = load({
      FAIRWAY_CORS_ORIGINS: 'https://portal.example.com',
      OIDC_ISSUER: 'https://idp.example',
      OIDC_JWKS_URL: 'https://idp.example/jwks',
    });
    const unfrozen: string[] = [];
    const walk = (value: unknown, at: string) => {
      if (!value || typeof value !== 'object') return;
      if (!Object.isFrozen(value)) unfrozen.push(at);
      for (const [key, inner] of Object.entries(value)) walk(inner, `${at}.${key}`);
    };
    walk(config, 'config');
    expect(unfrozen).toEqual([]);
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).toThrow(TypeError);
    expect(() => (config.http.corsOrigins as string[]).push('https://evil.example')).toThrow(TypeError);
    expect(() => {
      (config.auth.oidc as { issuer: string }).issuer = 'https://evil.example';
    }).toThrow(TypeError);
    expect(config.server.port).toBe(4000);
  });

  it('is a new object per load: nothing one caller changes (in a copy) reaches another', () => {
    expect(load({})).not.toBe(load({}));
    expect(load({}).rateLimits).not.toBe(load({}).rateLimits);
  });
});
