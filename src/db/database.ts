import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Logger } from 'pino';
import type { Executor, PreparedExecutor, PreparedStatement } from './executor.js';
import { isDeadlock } from './pg-errors.js';
import type { Database } from './schema.js';
import { fastTimestamptzParser } from './timestamps.js';

const INT8_OID = 20;
const TIMESTAMPTZ_OID = 1184;
const parseTimestamptz = fastTimestamptzParser(pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => unknown);

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
    return pg.types.getTypeParser(oid, format) as (text: string) => unknown;
  },
};

/**
 * The database of one jobclock instance: its pools, and the Executor (db/executor.ts) that runs
 * statements outside a transaction. Repository functions take the Executor only.
 */
export interface Db extends Executor {
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
  /**
   * Runs `work` in one transaction on a protocol connection, so its prepared statements keep their
   * generic plans (a transaction of `withTransaction` sends them unnamed, planned on every call).
   * Commits when `work` resolves, rolls back when it throws. The executor it hands `work` runs
   * prepared statements only, and its type says so: it has no Kysely, so a Kysely-built statement
   * does not type-check there (the worker protocol's statements are all prepared ones).
   */
  protocolTransaction<T>(work: (tx: PreparedExecutor) => Promise<T>): Promise<T>;
  /**
   * Makes every connection of both pools plan its statements afresh: each sends DISCARD PLANS
   * before its next statement (the connections in use, when they are next taken from the pool).
   * The plans a connection keeps were made for the job table as it was then (see PlanRefresher).
   */
  replan(): void;
  readonly url: string;
  destroy(): Promise<void>;
}

export interface DbOptions {
  url: string;
  poolSize?: number;
  logger?: Logger;
  applicationName?: string;
}

/**
 * How `poolSize` connections are split: two thirds (rounded) to the worker protocol, whose short
 * statements arrive from every worker at once (with half, batched workers queued for connections;
 * bench/README.md has the figures), the rest (at least one) to everything else: the scheduler's two
 * lanes, the loops, search and management.
 */
export function poolSplit(poolSize: number): { protocol: number; general: number } {
  const size = Math.max(2, Math.floor(poolSize));
  const protocol = Math.min(size - 1, Math.max(1, Math.round((size * 2) / 3)));
  return { protocol, general: size - protocol };
}

/** Builds the pools and the Kysely instance. Lazy: nothing connects until the first query. */
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
  // pg-pool awaits onConnect before it hands the new connection out, so the setting is in place
  // before the caller's first statement, and the two never overlap on the connection
  const protocol = new pg.Pool({
    ...config(split.protocol),
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- pg-pool awaits the promise; its types say void
    onConnect: async (client: pg.ClientBase) => {
      await client.query('SET plan_cache_mode = force_generic_plan');
    },
  });
  // A connection whose server went away (pg_terminate_backend, a failover, a pooler restart,
  // PostgreSQL stopping) must cost at most the request or tick that used it, never the process.
  // A pg.Client emits 'error' when its connection fails while no query of it is running, and an
  // 'error' event nobody listens to throws. pg-pool listens on its idle clients only: it takes
  // that listener off while a client is checked out — between two statements of a transaction,
  // or while a caller works with the client — so every client gets a listener of its own for its
  // whole life. The statement that next uses the client fails (a 503, or a retried tick), and the
  // pool discards the client on release and connects a new one.
  let destroyed = false;
  const lost = (err: Error & { code?: string }) => {
    if (destroyed) return; // the server going away during our own shutdown is expected
    options.logger?.warn({ err: { message: err.message, code: err.code } }, 'database connection lost; will reconnect');
  };
  // replan(): a connection whose plans are older than the last call discards them before its next
  // statement. pg queues a client's queries in order, so the DISCARD sent when the pool hands the
  // client out runs before the caller's first statement; its failure is the caller's too.
  let planEpoch = 0;
  const plannedIn = new WeakMap<pg.ClientBase, number>();
  const refresh = (client: pg.ClientBase) => {
    if ((plannedIn.get(client) ?? planEpoch) === planEpoch) return;
    plannedIn.set(client, planEpoch);
    client.query('DISCARD PLANS').catch(() => undefined);
  };
  for (const p of [pool, protocol]) {
    p.on('connect', (client) => {
      client.on('error', lost);
      plannedIn.set(client, planEpoch);
    });
    p.on('acquire', refresh);
    // the pool re-emits an idle client's error, which the client's own listener has logged
    p.on('error', () => undefined);
  }
  const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    kysely,
    pool,
    protocol,
    inTransaction: false,
    async prepared<R>(st: PreparedStatement): Promise<R[]> {
      const result = await protocol.query({ name: st.name, text: st.text, values: st.values as unknown[] });
      return result.rows as R[];
    },
    async protocolTransaction<T>(work: (tx: PreparedExecutor) => Promise<T>): Promise<T> {
      const client = await protocol.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        const tx: PreparedExecutor = {
          inTransaction: true,
          async prepared<R>(st: PreparedStatement): Promise<R[]> {
            const result = await client.query({ name: st.name, text: st.text, values: st.values as unknown[] });
            return result.rows as R[];
          },
        };
        const out = await work(tx);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr as Error; // the connection is gone: the pool discards it
        }
        throw err;
      } finally {
        client.release(broken);
      }
    },
    replan() {
      planEpoch++;
    },
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
 * Runs `work`, and again (up to `retries` times) when PostgreSQL broke a deadlock by rolling it back:
 * a statement or transaction that locks job, task or permit rows another one locks in another order
 * applied nothing and may simply run again.
 */
export async function retryOnDeadlock<T>(work: () => Promise<T>, retries = 3): Promise<T> {
  for (let deadlocks = 0; ; deadlocks++) {
    try {
      return await work();
    } catch (err) {
      if (isDeadlock(err) && deadlocks < retries) continue;
      throw err;
    }
  }
}
