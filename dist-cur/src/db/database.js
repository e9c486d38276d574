import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { isDeadlock } from './pg-errors.js';
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
    getTypeParser(oid, format) {
        if (format !== 'binary') {
            if (oid === INT8_OID)
                return (value) => Number(value);
            if (oid === TIMESTAMPTZ_OID)
                return parseTimestamptz;
        }
        return pg.types.getTypeParser(oid, format);
    },
};
/**
 * How `poolSize` connections are split: two thirds (rounded) to the worker protocol, whose short
 * statements arrive from every worker at once (with half, batched workers queued for connections;
 * bench/README.md has the figures), the rest (at least one) to everything else: the scheduler's two
 * lanes, the loops, search and management.
 */
export function poolSplit(poolSize) {
    const size = Math.max(2, Math.floor(poolSize));
    const protocol = Math.min(size - 1, Math.max(1, Math.round((size * 2) / 3)));
    return { protocol, general: size - protocol };
}
/** Builds the pools and the Kysely instance. Lazy: nothing connects until the first query. */
export function createDb(options) {
    const split = poolSplit(options.poolSize ?? 10);
    const config = (max) => ({
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
        onConnect: async (client) => {
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
    const lost = (err) => {
        if (destroyed)
            return; // the server going away during our own shutdown is expected
        options.logger?.warn({ err: { message: err.message, code: err.code } }, 'database connection lost; will reconnect');
    };
    // replan(): a connection whose plans are older than the last call discards them before its next
    // statement. pg queues a client's queries in order, so the DISCARD sent when the pool hands the
    // client out runs before the caller's first statement; its failure is the caller's too.
    let planEpoch = 0;
    const plannedIn = new WeakMap();
    const refresh = (client) => {
        if ((plannedIn.get(client) ?? planEpoch) === planEpoch)
            return;
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
    const kysely = new Kysely({ dialect: new PostgresDialect({ pool }) });
    return {
        kysely,
        pool,
        protocol,
        inTransaction: false,
        async prepared(st) {
            const result = await protocol.query({ name: st.name, text: st.text, values: st.values });
            return result.rows;
        },
        async protocolTransaction(work) {
            const client = await protocol.connect();
            let broken;
            try {
                await client.query('BEGIN');
                const tx = {
                    inTransaction: true,
                    async prepared(st) {
                        const result = await client.query({ name: st.name, text: st.text, values: st.values });
                        return result.rows;
                    },
                };
                const out = await work(tx);
                await client.query('COMMIT');
                return out;
            }
            catch (err) {
                try {
                    await client.query('ROLLBACK');
                }
                catch (rollbackErr) {
                    broken = rollbackErr; // the connection is gone: the pool discards it
                }
                throw err;
            }
            finally {
                client.release(broken);
            }
        },
        replan() {
            planEpoch++;
        },
        url: options.url,
        async destroy() {
            if (destroyed)
                return;
            destroyed = true;
            await Promise.all([kysely.destroy(), protocol.end()]);
        },
    };
}
/** A connection URL with the password hidden, for logs. */
export function redactUrl(url) {
    try {
        const u = new URL(url);
        if (u.password)
            u.password = '***';
        return u.toString();
    }
    catch {
        return '<unparseable url>';
    }
}
export function pgTypes() {
    return types;
}
/** The URL of database `name` on the same server as `url`. */
export function withDatabase(url, name) {
    const u = new URL(url);
    u.pathname = `/${name}`;
    return u.toString();
}
/**
 * Creates database `name` on the server of `adminUrl` unless it exists, as a copy of `template`
 * when given; returns its URL.
 */
export async function ensureDatabase(adminUrl, name, options = {}) {
    const admin = createDb({ url: adminUrl, poolSize: 1, ...(options.logger ? { logger: options.logger } : {}) });
    try {
        const { rows } = await admin.pool.query('select 1 from pg_database where datname = $1', [name]);
        if (rows.length === 0) {
            const template = options.template ? ` template "${options.template}"` : '';
            await admin.pool.query(`create database "${name}"${template}`);
            options.logger?.info({ database: name }, 'created database');
        }
    }
    finally {
        await admin.destroy();
    }
    return withDatabase(adminUrl, name);
}
/** One round trip that proves the database answers. */
export async function pingDatabase(db) {
    await db.pool.query('select 1');
}
/**
 * Runs `work`, and again (up to `retries` times) when PostgreSQL broke a deadlock by rolling it back:
 * a statement or transaction that locks job, task or permit rows another one locks in another order
 * applied nothing and may simply run again.
 */
export async function retryOnDeadlock(work, retries = 3) {
    for (let deadlocks = 0;; deadlocks++) {
        try {
            return await work();
        }
        catch (err) {
            if (isDeadlock(err) && deadlocks < retries)
                continue;
            throw err;
        }
    }
}
//# sourceMappingURL=database.js.map