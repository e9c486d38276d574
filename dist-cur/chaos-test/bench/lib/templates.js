import { Logger as GraphileLogger018, makeWorkerUtils as makeWorkerUtils018, runMigrations as runMigrations018 } from 'graphile-worker-018';
import { PgBoss as PgBoss12 } from 'pg-boss-12';
import { createDb } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/db/migrate.js';
export const PGBOSS_QUEUE = 'bench';
export const silentGraphileLogger018 = new GraphileLogger018(() => () => undefined);
export function pgBoss12Options(url) {
    return { connectionString: url, application_name: 'pg-boss-12' };
}
const HOUR = 3600_000;
/** The periodic tasks of the growth template (bench rows (j)). */
export const GROWTH_TASKS = 100_000;
/**
 * Template databases, made once per run when first needed: each system's empty schema, and
 * seeded copies (queued no-op jobs, due periodic tasks) so that a measurement's fresh database is
 * a 0.2 s file copy instead of seconds of INSERTs and index building.
 */
export class Templates {
    server;
    jobs;
    tasks;
    log;
    made = new Map();
    /** The nextrun of every seeded due task (a second before the template was made). */
    tasksSlot = null;
    constructor(server, 
    /** Jobs in each seeded job template. */
    jobs, 
    /** Tasks in the seeded task template. */
    tasks, log) {
        this.server = server;
        this.jobs = jobs;
        this.tasks = tasks;
        this.log = log;
    }
    once(name, make, settle = true) {
        let p = this.made.get(name);
        if (!p) {
            p = (async () => {
                const started = performance.now();
                const db = await make();
                if (settle)
                    await db.settle(); // planner statistics travel with the copy
                // A template may not have open connections when it is copied.
                await this.server.admin((c) => c.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [db.name]));
                this.log(`template ${name} ready [${((performance.now() - started) / 1000).toFixed(1)} s]`);
                return db.name;
            })();
            this.made.set(name, p);
        }
        return p;
    }
    /** jobclock's schema (migrations applied). */
    jobclock() {
        return this.once('jobclock', async () => {
            const db = await this.server.createDatabase(undefined, 'tpl_jobclock');
            const k = createDb({ url: db.url, poolSize: 1 });
            try {
                await migrateToLatest(k.kysely);
            }
            finally {
                await k.destroy();
            }
            return db;
        });
    }
    /**
     * jobclock's schema as a fresh deployment has it: migrated, no table ever analyzed
     * (pg_class.reltuples = -1), as the first minutes of a new database, or one whose autovacuum is off.
     */
    jobclockNeverAnalyzed() {
        return this.once('jobclock+never-analyzed', async () => {
            const db = await this.server.createDatabase(undefined, 'tpl_jobclock_na');
            const k = createDb({ url: db.url, poolSize: 1 });
            try {
                await migrateToLatest(k.kysely);
            }
            finally {
                await k.destroy();
            }
            return db;
        }, false);
    }
    /**
     * `jobs` queued no-op jobs in jobclock's job table, inserted as plain rows; with `groups`, spread
     * over that many groups (job n in group `tenant:<n mod groups>`), else all in the default group.
     */
    jobclockJobs(groups = 1, count = this.jobs) {
        const name = (groups === 1 ? 'jobclock+jobs' : `jobclock+jobs+${groups}groups`) + (count === this.jobs ? '' : `+${count}`);
        return this.once(name, async () => {
            const db = await this.server.createDatabase(await this.jobclock(), (groups === 1 ? 'tpl_jobclock_jobs' : `tpl_jobclock_jobs_${groups}g`) + (count === this.jobs ? '' : `_${count}`));
            for (let done = 0; done < count; done += 10_000) {
                await db.exec(`insert into job (type, group_, args, run_at)
           select 'noop', ${groups === 1 ? `'default'` : `'tenant:' || (g % ${groups})`}, jsonb_build_object('n', g), now()
           from generate_series($1::int, $2::int) g`, [done + 1, Math.min(count, done + 10_000)]);
            }
            return db;
        });
    }
    /**
     * `queue` queued no-op jobs (jobclockJobs()) behind a history of `history` final jobs, as a table
     * looks after months of work: 20 types (and a rare one, 1 job in 100,000), 1,000 groups, args naming one of 100,000 customers,
     * 1 % failed (with an error), the rest finished, all within the last 6 days (inside retention);
     * and GROWTH_TASKS periodic tasks (`every 1h`, type `tick`, their next runs set by the measurement).
     * Built from SQL: the secondary indexes of job and job_search are dropped, the rows inserted in one
     * statement, and the indexes made again in bulk (far faster than maintaining a trigram GIN row by
     * row), then vacuumed (visibility map set) and analyzed.
     */
    jobclockHistory(history, queue = this.jobs) {
        return this.once(`jobclock+history${history}+${queue}`, async () => {
            const db = await this.server.createDatabase(await this.jobclockJobs(1, queue), `tpl_jobclock_history_${queue}`);
            const started = performance.now();
            const { rows: indexes } = await db.exec(`select i.relname as name, pg_get_indexdef(i.oid) as def
           from pg_index x join pg_class i on i.oid = x.indexrelid
          where x.indrelid in ('job'::regclass, 'job_search'::regclass)
            and not exists (select 1 from pg_constraint c where c.conindid = i.oid)`);
            const defs = indexes;
            for (const { name } of defs)
                await db.exec(`drop index ${name}`);
            await insertFinalJobs(db, () => db.exec(`insert into job (type, group_, args, subject, state, run_at, attempts, max_attempts, worker,
                          started_at, finished_at, result, error, created_at, updated_at)
         select case when g % 100000 = 7 then 'hist-rare' else 'hist-' || (g % 20) end, 'customer:' || (g % 1000),
                jsonb_build_object('n', g, 'customer', 'c-' || (g % 100000)), 'order ' || g,
                case when g % 100 = 0 then 'failed' else 'finished' end,
                t, 1, 1, 'w-' || (g % 50), t, t + interval '20 ms',
                case when g % 100 = 0 then null else '{"ok":true}'::jsonb end,
                case when g % 100 = 0 then jsonb_build_object('message', 'upstream said no to ' || g) end,
                t, t + interval '20 ms'
           from generate_series(1, $1::bigint) g,
                lateral (select now() - interval '6 days' + (g % 500000) * interval '1 s' as t) x`, [history]));
            this.log(`  history: ${history.toLocaleString('en-US')} rows inserted in ${Math.round((performance.now() - started) / 1000)} s`);
            await db.exec(`set maintenance_work_mem = '1GB'`);
            // job_search's indexes are partitioned (migration 0018): made on the table, not ONLY on it, so
            // that each partition gets its own
            for (const { def } of defs)
                await db.exec(def.replace(' ON ONLY ', ' ON '));
            this.log(`  history: ${defs.length} indexes made again, ${Math.round((performance.now() - started) / 1000)} s in all`);
            await db.exec(`insert into periodic_task (id, task, timer, nextrun, created, updated)
         select 'growth-' || g, 'tick', 'every 1h', now() + interval '1 day', now(), now()
           from generate_series(1, $1::int) g`, [GROWTH_TASKS]);
            await db.exec('vacuum (analyze) job');
            await db.exec('vacuum (analyze) job_search');
            await db.exec('vacuum (analyze) periodic_task');
            return db;
        });
    }
    /** The queued no-op jobs of jobclockJobs() and `expired` final jobs past the 7-day retention. */
    jobclockExpired(expired, queue = this.jobs) {
        return this.once(`jobclock+expired${expired}+${queue}`, async () => {
            const db = await this.server.createDatabase(await this.jobclockJobs(1, queue), `tpl_jobclock_expired_${queue}`);
            await insertFinalJobs(db, async () => {
                for (let done = 0; done < expired; done += 500_000) {
                    await db.exec(`insert into job (type, args, state, run_at, attempts, max_attempts, worker, started_at, finished_at, result, created_at, updated_at)
           select 'old-' || (g % 20), jsonb_build_object('n', g), 'finished', t, 1, 1, 'w-' || (g % 50), t, t, '{"ok":true}', t, t
             from generate_series($1::bigint, $2::bigint) g,
                  lateral (select now() - interval '30 days' + (g % 500000) * interval '1 s' as t) x`, [done + 1, Math.min(expired, done + 500_000)]);
                }
            });
            await db.exec('vacuum (analyze) job');
            await db.exec('vacuum (analyze) job_search');
            return db;
        });
    }
    /** pg-boss 12's schema with the `bench` queue. */
    pgboss12() {
        return this.once('pgboss12', async () => {
            const db = await this.server.createDatabase(undefined, 'tpl_pgboss12');
            const boss = new PgBoss12(pgBoss12Options(db.url));
            boss.on('error', (err) => this.log(`pg-boss 12 error: ${err.message}`));
            await boss.start();
            await boss.createQueue(PGBOSS_QUEUE);
            await boss.stop({ graceful: false });
            return db;
        });
    }
    /** `jobs` no-op jobs in pg-boss 12's `bench` queue, inserted with its own insert(). */
    pgboss12Jobs() {
        return this.once('pgboss12+jobs', async () => {
            const db = await this.server.createDatabase(await this.pgboss12(), 'tpl_pgboss12_jobs');
            const boss = new PgBoss12({ ...pgBoss12Options(db.url), supervise: false, schedule: false });
            boss.on('error', (err) => this.log(`pg-boss 12 error: ${err.message}`));
            await boss.start();
            try {
                for (let i = 0; i < this.jobs; i += 1000) {
                    await boss.insert(PGBOSS_QUEUE, Array.from({ length: Math.min(1000, this.jobs - i) }, (_, k) => ({ data: { n: i + k } })));
                }
            }
            finally {
                await boss.stop({ graceful: false });
            }
            return db;
        });
    }
    /** graphile-worker 0.18's schema. */
    graphile018() {
        return this.once('graphile018', async () => {
            const db = await this.server.createDatabase(undefined, 'tpl_graphile018');
            await runMigrations018({ connectionString: db.url, logger: silentGraphileLogger018 });
            return db;
        });
    }
    /** `jobs` no-op jobs of task `noop`, added with graphile-worker 0.18's own addJobs(). */
    graphile018Jobs() {
        return this.once('graphile018+jobs', async () => {
            const db = await this.server.createDatabase(await this.graphile018(), 'tpl_graphile018_jobs');
            const utils = await makeWorkerUtils018({ connectionString: db.url, logger: silentGraphileLogger018 });
            try {
                for (let i = 0; i < this.jobs; i += 1000) {
                    await utils.addJobs(Array.from({ length: Math.min(1000, this.jobs - i) }, (_, k) => ({ identifier: 'noop', payload: { n: i + k } })));
                }
            }
            finally {
                await utils.release();
            }
            return db;
        });
    }
    /**
     * `tasks` enabled interval tasks (`every 1h`, default policy forbid), all due: nextrun a second
     * before the template was made, created an hour before that (so the following run is an hour
     * after the slot; a measurement minutes later still submits exactly one run per task).
     */
    jobclockTasks() {
        return this.once('jobclock+tasks', async () => {
            const db = await this.server.createDatabase(await this.jobclock(), 'tpl_jobclock_tasks');
            const slot = new Date(Date.now() - 1000);
            await db.exec(`insert into periodic_task (id, task, timer, nextrun, created, updated)
         select 'bench-' || g, 'bench', 'every 1h', $1::timestamptz, $2::timestamptz, $2::timestamptz
           from generate_series(1, $3::int) g`, [slot, new Date(slot.getTime() - HOUR), this.tasks]);
            this.tasksSlot = slot;
            return db;
        });
    }
}
/**
 * Runs `insert`, which adds final jobs in bulk, with the row trigger that writes their search rows
 * one by one switched off, and writes those rows afterwards in one statement (migrations 0013 and
 * 0017), into the partitions the upkeep makes for the new ids first (migration 0018), as the
 * service's retention sweep does; their ids sealed as copied, as the SearchRowCopier leaves them
 * (migration 0030; the queued jobs' slices before them are the copier's to seal as they drain).
 */
async function insertFinalJobs(db, insert) {
    await db.exec('alter table job disable trigger job_search_on_insert');
    try {
        await insert();
    }
    finally {
        await db.exec('alter table job enable trigger job_search_on_insert');
    }
    await db.exec('select jobclock_search_upkeep()');
    await db.exec(`insert into job_search_sealed (lo, hi, copied_at)
     select x.lo, x.hi, now()
       from (select greatest((select coalesce(max(hi), 0) from job_search_sealed),
                             (select min(id) from job where state in ('finished', 'failed', 'dropped', 'cancelled')) / 10000 * 10000) as lo,
                    (pg_sequence_last_value(pg_get_serial_sequence('job', 'id')) / 10000 + 1) * 10000 as hi) x
      where x.hi > x.lo`);
    await db.exec(`insert into job_search (id, type, group_, worker, args, text)
     select id, type, group_, worker, args, jobclock_search_text(args, subject, error) from job
      where state in ('finished', 'failed', 'dropped', 'cancelled')`);
}
//# sourceMappingURL=templates.js.map