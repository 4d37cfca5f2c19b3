import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';

describe('configuration from the environment', () => {
  it('defaults to SQLite in ./data on port 4000 with the demo on', () => {
    const config = loadConfig({});
    expect(config.port).toBe(4000);
    expect(config.database).toEqual({ dialect: 'sqlite', file: path.resolve('data/fairway.db'), synchronous: 'normal' });
    expect(config.demo).toBe(true);
    expect(config.oidc).toBeUndefined();
  });

  it('picks PostgreSQL from a postgres URL', () => {
    expect(loadConfig({ DATABASE_URL: 'postgres://u@h:5432/db' }).database).toEqual({ dialect: 'postgresql', url: 'postgres://u@h:5432/db' });
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
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('never echoes a database password', () => {
    try {
      loadConfig({ DATABASE_URL: 'mysql://u:hunter2@h/db' });
    } catch (error) {
      expect(String(error)).not.toContain('hunter2');
    }
  });
});
