import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Database } from './schema.js';
import { fastTimestamptzParser } from './timestamps.js';

const INT8_OID = 20;
const TIMESTAMPTZ_OID = 1184;
const parseTimestamptz = fastTimestamptzParser(pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text'));

/**
 * bigint columns (ids, millisecond durations, counts) come back as JavaScript numbers: every
 * value jobclock stores stays far below 2^53. Job ids are turned into strings at the API edge.
 * timestamptz values go through a parser for the common text form (see timestamps.ts).
 */
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (format !== 'binary') {
      if (oid === INT8_OID) return (value: string) => Number(value);
      if (oid === TIMESTAMPTZ_OID) return parseTimestamptz;
    }
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface Db {
  readonly kysely: Kysely<Database>;
  readonly pool: pg.Pool;
  /**
   * The worker protocol's connections (lease, report, heartbeat, insert: the prepared statements of
   * repositories/jobs.ts), set to plan_cache_mode = force_generic_plan. Left to choose, PostgreSQL
   * planned the lease statement afresh on every call (its generic plan's estimates, with an unknown
   * LIMIT, never beat the custom plans'), which cost more than executing it. Those statements'
   * generic plans are the index plans the custom ones are; the rest of jobclock's queries (search,
   * the scheduler) keep the default on `pool`, where values can pick partial indexes.
   */
  readonly protocol: pg.Pool;
  readonly url: string;
  destroy(): Promise<void>;
}

export interface DbOptions {
  url: string;
  poolSize?: number;
  logger?: Logger;
  applicationName?: string;
}

/** Builds the pool and the Kysely instance. Lazy: nothing connects until the first query. */
/**
 * How `poolSize` connections are split: two thirds (rounded) to the worker protocol, whose short
 * statements arrive from every worker at once (with half, batched workers queued for connections:
 * 1.49× pg-boss in the benchmark against 1.71× with two thirds), the rest (at least one) to
 * everything else: the scheduler's two lanes, the reaper, search and management.
 */
export function poolSplit(poolSize: number): { protocol: number; general: number } {
  const size = Math.max(2, Math.floor(poolSize));
  const protocol = Math.min(size - 1, Math.max(1, Math.round((size * 2) / 3)));
  return { protocol, general: size - protocol };
}

export function createDb(options: DbOptions): Db {
  const split = poolSplit(options.poolSize ?? 10);
  const config = (max: number): pg.PoolConfig => ({
    connectionString: options.url,
    max,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: options.applicationName ?? 'jobclock',
    types,
  });
  const pool = new pg.Pool(config(split.general));
  const protocol = new pg.Pool(config(split.protocol));
  // queued on the new connection before any statement of the caller's
  protocol.on('connect', (client) => void client.query('SET plan_cache_mode = force_generic_plan').catch(() => undefined));
  // An idle client whose server went away must not crash the process: the next query
  // reconnects, and requests meanwhile answer 503.
  let destroyed = false;
  for (const p of [pool, protocol]) {
    p.on('error', (err: Error & { code?: string }) => {
      if (destroyed) return; // the server going away during our own shutdown is expected
      options.logger?.warn({ err: { message: err.message, code: err.code } }, 'database connection lost; will reconnect');
    });
  }
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    pool,
    protocol,
    url: options.url,
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      await Promise.all([kysely.destroy(), protocol.end()]);
    },
  };
}

/** A connection URL with the password hidden, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}

export function pgTypes() {
  return types;
}

/** The URL of database `name` on the same server as `url`. */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Creates database `name` on the server of `adminUrl` unless it exists, as a copy of `template`
 * when given; returns its URL.
 */
export async function ensureDatabase(
  adminUrl: string,
  name: string,
  options: { template?: string; logger?: Logger } = {},
): Promise<string> {
  const admin = createDb({ url: adminUrl, poolSize: 1, ...(options.logger ? { logger: options.logger } : {}) });
  try {
    const { rows } = await admin.pool.query('select 1 from pg_database where datname = $1', [name]);
    if (rows.length === 0) {
      const template = options.template ? ` template "${options.template}"` : '';
      await admin.pool.query(`create database "${name}"${template}`);
      options.logger?.info({ database: name }, 'created database');
    }
  } finally {
    await admin.destroy();
  }
  return withDatabase(adminUrl, name);
}

/** One round trip that proves the database answers. */
export async function pingDatabase(db: Db): Promise<void> {
  await db.pool.query('select 1');
}

/**
 * Runs `work` in one transaction on one connection. The Db handed to it runs its pool queries on
 * that connection (repository functions that query through `db.pool` or `db.protocol`, as prepared
 * statements do).
 */
export async function withTransaction<T>(db: Db, work: (tx: Db) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    await client.query('BEGIN');
    const result = await work({ ...db, pool: client as unknown as pg.Pool, protocol: client as unknown as pg.Pool });
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** PostgreSQL's deadlock_detected: the statement was rolled back and may simply be run again. */
export function isDeadlock(err: unknown): boolean {
  return (err as { code?: unknown } | null)?.code === '40P01';
}
