import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the documented defaults for an empty environment', () => {
    const c = loadConfig({}, '/srv/app');
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      databaseUrl: undefined,
      logLevel: 'info',
      tokens: [],
      scheduler: true,
      bodyLimit: 1024 * 1024,
      dataDir: '/srv/app/.data/postgres',
      retentionMs: 7 * 24 * 3600 * 1000,
      searchFlushMs: null,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('reads every variable', () => {
    const c = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/jobs',
      LOG_LEVEL: 'debug',
      JOBCLOCK_TOKENS: 'admin:aaaaaaaaaaaaaaaa, worker:bbbbbbbbbbbbbbbb',
      JOBCLOCK_SCHEDULER: 'off',
      JOBCLOCK_BODY_LIMIT: '2048',
      JOBCLOCK_RETENTION: '2d',
      JOBCLOCK_SEARCH_FLUSH: '1s',
    });
    expect(c.port).toBe(8080);
    expect(c.databaseUrl).toBe('postgres://u:p@db:5432/jobs');
    expect(c.tokens).toEqual([
      { role: 'admin', token: 'aaaaaaaaaaaaaaaa' },
      { role: 'worker', token: 'bbbbbbbbbbbbbbbb' },
    ]);
    expect(c.scheduler).toBe(false);
    expect(c.bodyLimit).toBe(2048);
    expect(c.retentionMs).toBe(2 * 24 * 3600 * 1000);
    expect(c.searchFlushMs).toBe(1000);
    expect(loadConfig({ JOBCLOCK_SEARCH_FLUSH: 'OFF' }).searchFlushMs).toBeNull();
    expect(loadConfig({}).deliveryBudget).toBe(300);
    expect(loadConfig({ JOBCLOCK_DELIVERY_BUDGET: '2000' }).deliveryBudget).toBe(2000);
    expect(loadConfig({ JOBCLOCK_DELIVERY_BUDGET: 'Off' }).deliveryBudget).toBeNull();
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '' }).port).toBe(3000);
  });

  it.each([
    [{ PORT: 'eighty' }, /^PORT: expected a whole number/],
    [{ PORT: '70000' }, /^PORT: expected at most 65535/],
    [{ DATABASE_URL: 'mysql://x' }, /^DATABASE_URL: expected a URL like postgres:\/\//],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL: expected one of fatal/],
    [{ JOBCLOCK_TOKENS: 'boss:aaaaaaaaaaaaaaaa' }, /^JOBCLOCK_TOKENS: expected comma-separated role:token pairs/],
    [{ JOBCLOCK_TOKENS: 'admin:short' }, /^JOBCLOCK_TOKENS: the admin token is too short/],
    [{ JOBCLOCK_SCHEDULER: 'maybe' }, /^JOBCLOCK_SCHEDULER: expected "on" or "off"/],
    [{ JOBCLOCK_RETENTION: 'forever' }, /^JOBCLOCK_RETENTION: expected a duration/],
    [{ JOBCLOCK_SEARCH_FLUSH: 'sometimes' }, /^JOBCLOCK_SEARCH_FLUSH: expected "off" or a duration of at least 100 ms/],
    [{ JOBCLOCK_SEARCH_FLUSH: '10ms' }, /^JOBCLOCK_SEARCH_FLUSH: expected "off" or a duration of at least 100 ms/],
    [{ JOBCLOCK_DELIVERY_BUDGET: 'fast' }, /^JOBCLOCK_DELIVERY_BUDGET: expected "off" or a whole number between 1 and 1000000/],
    [{ JOBCLOCK_DELIVERY_BUDGET: '0' }, /^JOBCLOCK_DELIVERY_BUDGET: expected "off" or a whole number between 1 and 1000000/],
  ])('names the bad variable and what it expects: %j', (env, message) => {
    expect(problems(env)[0]).toMatch(message);
  });

  it('lists every bad variable at once', () => {
    expect(problems({ PORT: 'x', LOG_LEVEL: 'y' })).toHaveLength(2);
  });

  it('refuses to listen beyond loopback without tokens', () => {
    expect(problems({ HOST: '0.0.0.0' })[0]).toMatch(/^HOST: refusing to listen on "0.0.0.0" without authentication; set JOBCLOCK_TOKENS/);
    expect(loadConfig({ HOST: '::1' }).host).toBe('::1');
    expect(loadConfig({ HOST: 'localhost' }).host).toBe('localhost');
  });

  it('rejects a token listed twice', () => {
    expect(problems({ JOBCLOCK_TOKENS: 'admin:aaaaaaaaaaaaaaaa,reader:aaaaaaaaaaaaaaaa' })[0]).toMatch(/listed twice/);
  });
});
