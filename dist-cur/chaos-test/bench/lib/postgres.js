import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { startEmbedded } from '../../src/db/embedded.js';
/**
 * One embedded PostgreSQL for the whole run, with its default (durable) settings: fsync,
 * synchronous_commit and full_page_writes on. Every measurement gets a fresh database copied
 * from a template that already holds the schema of the system under test.
 */
const SETTINGS = {
    max_connections: '200',
    track_commit_timestamp: 'on',
    // diagnosis only: e.g. BENCH_PG_SETTINGS='{"shared_buffers":"1GB"}' (printed in the header)
    ...JSON.parse(process.env.BENCH_PG_SETTINGS ?? '{}'),
};
/**
 * BENCH_PG_LOG=<file>: the server's own log written there (diagnosis only, e.g. with auto_explain
 * loaded through BENCH_PG_SETTINGS; logging_collector cannot be used, since the server's start is
 * recognised by its log on stderr).
 */
const serverLog = process.env.BENCH_PG_LOG
    ? pino({ level: 'debug' }, pino.destination({ dest: process.env.BENCH_PG_LOG, sync: false }))
    : undefined;
export class BenchServer {
    embedded;
    tmp;
    adminUrl;
    statementSource;
    constructor(embedded, tmp, adminUrl, 
    /** Where statement counts come from: pg_stat_statements when it loads, else pg_stat_database. */
    statementSource) {
        this.embedded = embedded;
        this.tmp = tmp;
        this.adminUrl = adminUrl;
        this.statementSource = statementSource;
    }
    /**
     * Only what the harness needs on top of the defaults: enough connections for 50 idle
     * long-polls plus the references' pools; pg_stat_statements for counting statements
     * (pg_stat_database's counters of a busy backend are flushed too rarely to time a 3 s window);
     * track_commit_timestamp, so (h) can tell when each job was committed. Nothing that trades
     * durability for speed.
     */
    static async start() {
        const tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-bench-'));
        await chmod(tmp, 0o755); // the postgres user must be able to enter it when we run as root
        const dataDir = path.join(tmp, 'data');
        let embedded;
        try {
            try {
                embedded = await startEmbedded({
                    dataDir,
                    logger: serverLog,
                    settings: { ...SETTINGS, shared_preload_libraries: 'pg_stat_statements' },
                });
                const server = new BenchServer(embedded, tmp, embedded.url, 'pg_stat_statements');
                try {
                    await server.admin((c) => c.query('create extension if not exists pg_stat_statements'));
                    return server;
                }
                catch {
                    await embedded.stop();
                }
            }
            catch {
                // no pg_stat_statements in these server binaries: start without it
            }
            embedded = await startEmbedded({ dataDir, logger: serverLog, settings: { ...SETTINGS, shared_preload_libraries: '' } });
            return new BenchServer(embedded, tmp, embedded.url, 'pg_stat_database');
        }
        catch (err) {
            await rm(tmp, { recursive: true, force: true });
            throw err;
        }
    }
    urlFor(database) {
        const u = new URL(this.adminUrl);
        u.pathname = `/${database}`;
        return u.toString();
    }
    async admin(fn) {
        const client = new pg.Client({ connectionString: this.adminUrl, application_name: 'bench-admin' });
        await client.connect();
        try {
            return await fn(client);
        }
        finally {
            await client.end();
        }
    }
    async createDatabase(template, prefix = 'bench') {
        const name = `${prefix}_${randomBytes(5).toString('hex')}`;
        await this.admin((c) => c.query(`create database "${name}"${template ? ` template "${template}"` : ''}`));
        return new FreshDatabase(this, name, this.urlFor(name));
    }
    async serverVersion() {
        return this.admin(async (c) => (await c.query("select current_setting('server_version') as v")).rows[0].v);
    }
    async settings(names) {
        return this.admin(async (c) => {
            const { rows } = await c.query('select name, setting from pg_settings where name = any($1)', [
                names,
            ]);
            return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
        });
    }
    async stop() {
        try {
            await this.embedded.stop();
        }
        finally {
            await rm(this.tmp, { recursive: true, force: true });
        }
    }
}
export class FreshDatabase {
    server;
    name;
    url;
    constructor(server, name, url) {
        this.server = server;
        this.name = name;
        this.url = url;
    }
    async client(applicationName = 'bench') {
        const c = new pg.Client({ connectionString: this.url, application_name: applicationName });
        await c.connect();
        return c;
    }
    /** Runs statements on a short-lived connection. */
    async exec(text, values) {
        const c = await this.client('bench-setup');
        try {
            return await c.query(text, values);
        }
        finally {
            await c.end();
        }
    }
    /**
     * Waits until the OS has written its dirty pages out (sync: all of them, this database's among
     * them). A database copied from a template of gigabytes was still being written out during the
     * first seconds of a timed window (vmstat: 0.2-0.6 GB dirty, up to 165 MB under writeback, iowait
     * 12-23 %), which took the rows behind the long history down in their first round. Returns the
     * milliseconds it waited.
     */
    async written() {
        const started = performance.now();
        await promisify(execFile)('sync').catch(() => undefined);
        return performance.now() - started;
    }
    /**
     * Before timing: fresh planner statistics for the tables just seeded (as autovacuum would have
     * them soon), and a checkpoint so that no measurement pays for an earlier one's dirty pages,
     * written out by the OS too.
     */
    async settle() {
        const c = await this.client('bench-setup');
        try {
            const { rows } = await c.query(`select format('%I.%I', n.nspname, r.relname) as t
           from pg_class r join pg_namespace n on n.oid = r.relnamespace
          where r.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'`);
            if (rows.length > 0)
                await c.query(`analyze ${rows.map((r) => r.t).join(', ')}`);
        }
        finally {
            await c.end();
        }
        await this.server.admin((a) => a.query('checkpoint'));
        await this.written(); // what the checkpoint wrote, too
    }
    /**
     * Statements executed in this database so far: calls in pg_stat_statements, or committed and
     * rolled-back transactions in pg_stat_database when the extension is not loaded (each
     * autocommit statement is one; a busy backend reports these only now and then).
     */
    /**
     * BENCH_STATEMENTS=1: the statements of this database that took the most time, from
     * pg_stat_statements (calls, rows, mean and total execution time, WAL bytes and shared buffer
     * hits per call), for profiling a row.
     */
    async topStatements(limit = 8, by = 'time') {
        if (this.server.statementSource !== 'pg_stat_statements')
            return '(pg_stat_statements is not loaded)';
        return this.server.admin(async (c) => {
            const { rows } = await c.query(`select calls::text, rows::text, mean_exec_time as mean, total_exec_time as total,
                wal_bytes::float8 / greatest(calls, 1) as wal, shared_blks_hit::float8 / greatest(calls, 1) as hit,
                regexp_replace(query, '\\s+', ' ', 'g') as query
           from pg_stat_statements where dbid = (select oid from pg_database where datname = $1)
          order by ${by === 'calls' ? 'calls' : 'total_exec_time'} desc limit $2`, [this.name, limit]);
            return rows
                .map((r) => `  ${r.total.toFixed(0).padStart(7)} ms ${r.calls.padStart(7)} calls ${r.rows.padStart(8)} rows ${r.mean.toFixed(3).padStart(8)} ms/call ` +
                `${Math.round(r.wal).toString().padStart(8)} WAL B/call ${Math.round(r.hit).toString().padStart(6)} hits/call  ${r.query.slice(0, 110)}`)
                .join('\n');
        });
    }
    /** BENCH_STATEMENTS=1: calls per statement text so far (pg_stat_statements), to diff two moments. */
    async callsByStatement() {
        if (this.server.statementSource !== 'pg_stat_statements')
            return new Map();
        return this.server.admin(async (c) => {
            const { rows } = await c.query(`select calls::text, regexp_replace(query, '\\s+', ' ', 'g') as query from pg_stat_statements
          where dbid = (select oid from pg_database where datname = $1)`, [this.name]);
            return new Map(rows.map((r) => [r.query.slice(0, 110), Number(r.calls)]));
        });
    }
    async statements() {
        return this.server.admin(async (c) => {
            const { rows } = this.server.statementSource === 'pg_stat_statements'
                ? await c.query(`select coalesce(sum(calls), 0)::text as n from pg_stat_statements
                where dbid = (select oid from pg_database where datname = $1)`, [this.name])
                : await c.query('select (xact_commit + xact_rollback)::text as n from pg_stat_database where datname = $1', [
                    this.name,
                ]);
            return Number(rows[0]?.n ?? 0);
        });
    }
    /**
     * Done with this database. DROP DATABASE costs a checkpoint (about a second with fsync on), so
     * the database is left in place, closed to connections and to autovacuum so that it cannot
     * stir in the background of later measurements; the whole server folder goes at the end. A
     * database over 1 GB is dropped all the same: the growth rows' copies of a 10-million-job history
     * are several GB each, and three rounds of them filled the disk. (The next measurement takes its
     * own checkpoint before timing, so the drop's costs none of its figures.)
     */
    async retire() {
        const size = await this.server.admin(async (a) => {
            await a.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [this.name]);
            const { rows } = await a.query('select pg_database_size($1)::text as bytes', [this.name]);
            return Number(rows[0]?.bytes ?? 0);
        });
        if (size > 1024 ** 3) {
            await this.server.admin((a) => a.query(`drop database "${this.name}" with (force)`));
            return;
        }
        const c = await this.client('bench-setup');
        try {
            const { rows } = await c.query(`select format('%I.%I', n.nspname, r.relname) as t
           from pg_class r join pg_namespace n on n.oid = r.relnamespace
          where r.relkind = 'r' and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'`);
            await c.query('begin');
            for (const r of rows)
                await c.query(`alter table ${r.t} set (autovacuum_enabled = false, toast.autovacuum_enabled = false)`);
            await c.query('commit');
        }
        finally {
            await c.end();
        }
        await this.server.admin(async (a) => {
            await a.query(`alter database "${this.name}" allow_connections false`);
            await a.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [this.name]);
        });
    }
}
//# sourceMappingURL=postgres.js.map