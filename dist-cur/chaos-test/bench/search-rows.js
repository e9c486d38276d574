/**
 * `node dist/bench/search-rows.js`: what a finished job's search row costs PostgreSQL, written by the
 * report (as before migration 0030: every id sealed) against copied in bulk once its slice has
 * drained (0030: nothing in the report; one INSERT … SELECT afterwards, as the SearchRowCopier does). Same build, same statements: jobclock's own lease and report (jobLease +
 * jobReport of 100, prepared, generic plans, as the README loop's requests run them) over
 * SEARCH_JOBS (default 20,000) queued jobs whose args look like a user's, on one connection each
 * way, the two ways alternated SEARCH_ROUNDS (default 6) times on fresh copies of one template. CPU
 * is the backends' (/proc/<pid>/schedstat of the connection's server process), WAL from
 * pg_current_wal_lsn() around the loop, both after a CHECKPOINT; the bulk step is timed apart:
 * the cost it defers. pg-boss 12's fetch 100 + complete on one caller over the same jobs (the same
 * data) runs in the same rounds, the reference of bench/'s (c) row. Prints medians and every round.
 */
import { readFileSync } from 'node:fs';
import { createDb } from '../src/db/database.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { jobLease, jobReport } from '../src/repositories/jobs.js';
import { PgBoss as PgBoss12 } from 'pg-boss-12';
import { BenchServer } from './lib/postgres.js';
import { pgBoss12Options, Templates } from './lib/templates.js';
const JOBS = Number(process.env.SEARCH_JOBS ?? 20_000);
const ROUNDS = Number(process.env.SEARCH_ROUNDS ?? 6);
const log = (m) => process.stderr.write(`${m}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const cpuNs = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ', 1)[0]);
/** The backend pids of `db`'s connections (one protocol connection, one general). */
async function backends(db) {
    const { rows } = await db.pool.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
    return [...rows.map((r) => r.pid), (await db.pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid];
}
const wal = async (db) => Number((await db.pool.query(`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS l`)).rows[0].l);
async function round(server, template, rowByRow) {
    const fresh = await server.createDatabase(template);
    const db = createDb({ url: fresh.url, poolSize: 2 });
    try {
        // as before 0030: every id sealed, so the report writes each job's row, and no index of final ids
        if (rowByRow)
            await db.pool.query('DROP INDEX job_final_id_idx');
        if (rowByRow)
            await db.pool.query(`INSERT INTO job_search_sealed (lo, hi, copied_at) SELECT coalesce(max(hi), 0), 9223372036854775807, now() FROM job_search_sealed`);
        const slots = Array.from({ length: 100 }, () => ({ worker: 'w', leaseMs: 60_000 }));
        // warm: plans and caches
        for (let i = 0; i < 5; i++) {
            const { leased } = await jobLease(db, { now: new Date(), types: ['noop'], slots });
            await jobReport(db, leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished', jitter: 1 })), new Date(), { jobs: false });
        }
        await db.pool.query('CHECKPOINT');
        const pids = await backends(db);
        const cpu0 = pids.map(cpuNs);
        const wal0 = await wal(db);
        let done = 0;
        for (;;) {
            const { leased } = await jobLease(db, { now: new Date(), types: ['noop'], slots });
            if (leased.length === 0)
                break;
            await jobReport(db, leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished', jitter: 1 })), new Date(), { jobs: false });
            done += leased.length;
        }
        const loopUs = pids.map(cpuNs).reduce((a, b, i) => a + b - cpu0[i], 0) / 1000 / done;
        const loopWal = ((await wal(db)) - wal0) / done;
        // what 0030 defers: the rows copied in one statement
        const pid = pids.at(-1);
        const c1 = cpuNs(pid);
        const w1 = await wal(db);
        if (!rowByRow) {
            // what the SearchRowCopier does once the slices have drained: sealed, rows copied in one statement
            await db.pool.query(`WITH s AS (INSERT INTO job_search_sealed (lo, hi, copied_at)
                    SELECT coalesce(max(hi), 0), (SELECT max(id) + 1 FROM job), now() FROM job_search_sealed RETURNING lo, hi)
         INSERT INTO job_search (id, type, group_, worker, args, text)
           SELECT j.id, j.type, j.group_, j.worker, j.args, jobclock_search_text(j.args, j.subject, j.error)
             FROM s JOIN job j ON j.id >= s.lo AND j.id < s.hi WHERE j.state = 'finished'
         ON CONFLICT (id) DO NOTHING`);
        }
        const bulkUs = (cpuNs(pid) - c1) / 1000 / done;
        const bulkWal = ((await wal(db)) - w1) / done;
        const rows = Number((await db.pool.query('SELECT count(*) AS n FROM job_search')).rows[0].n);
        if (rows < done)
            throw new Error(`${rows} search rows for ${done} finished jobs`);
        return { loopUs, loopWal, bulkUs, bulkWal };
    }
    finally {
        await db.destroy();
    }
}
/** pg-boss 12's fetch/complete loop over its copy of the same jobs: its backends' CPU and WAL per job. */
async function pgBossRound(server, template) {
    const fresh = await server.createDatabase(template);
    const boss = new PgBoss12({ ...pgBoss12Options(fresh.url), supervise: false, schedule: false });
    boss.on('error', (err) => log(`pg-boss 12 error: ${err.message}`));
    const probe = createDb({ url: fresh.url, poolSize: 1 });
    try {
        await boss.start();
        const loop = async (max) => {
            let done = 0;
            while (done < max) {
                const jobs = await boss.fetch('bench', { batchSize: 100 });
                if (jobs.length === 0)
                    break;
                await boss.complete('bench', jobs.map((j) => j.id));
                done += jobs.length;
            }
            return done;
        };
        await loop(500);
        await probe.pool.query('CHECKPOINT');
        const { rows } = await probe.pool.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
        const pids = rows.map((r) => r.pid);
        const cpu0 = pids.map(cpuNs);
        const wal0 = await wal(probe);
        const done = await loop(Number.MAX_SAFE_INTEGER);
        const loopUs = pids.map(cpuNs).reduce((a, b, i) => a + b - cpu0[i], 0) / 1000 / done;
        return { loopUs, loopWal: ((await wal(probe)) - wal0) / done, bulkUs: 0, bulkWal: 0 };
    }
    finally {
        await boss.stop({ graceful: false });
        await probe.destroy();
    }
}
const server = await BenchServer.start();
try {
    // the README loop's queue, with args a user's jobs would carry
    const tpl = await server.createDatabase(undefined, 'tpl_search');
    const setup = createDb({ url: tpl.url, poolSize: 1 });
    await migrateToLatest(setup.kysely);
    await setup.pool.query(`INSERT INTO job (type, args, subject, run_at)
     SELECT 'noop', jsonb_build_object('n', g, 'customer', 'c' || (g % 1000), 'to', 'user' || g || '@example.com'), 'mail ' || g, now()
       FROM generate_series(1, $1::int) g`, [JOBS]);
    await setup.pool.query('VACUUM ANALYZE job');
    await setup.destroy();
    const bossTpl = await server.createDatabase(await new Templates(server, JOBS, 1, log).pgboss12(), 'tpl_search_boss');
    const boss = new PgBoss12({ ...pgBoss12Options(bossTpl.url), supervise: false, schedule: false });
    await boss.start();
    for (let i = 0; i < JOBS; i += 1000)
        await boss.insert('bench', Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => {
            const g = i + k + 1;
            return { data: { n: g, customer: `c${g % 1000}`, to: `user${g}@example.com` } };
        }));
    await boss.stop({ graceful: false });
    const pgboss = [];
    const before = [];
    const after = [];
    for (let r = 0; r < ROUNDS; r++) {
        const b = await pgBossRound(server, bossTpl.name);
        pgboss.push(b);
        log(`round ${r + 1} pg-boss 12  : loop ${b.loopUs.toFixed(1)} µs ${Math.round(b.loopWal)} B a job`);
        for (const rowByRow of r % 2 === 0 ? [true, false] : [false, true]) {
            const s = await round(server, tpl.name, rowByRow);
            (rowByRow ? before : after).push(s);
            log(`round ${r + 1} ${rowByRow ? 'row by row' : 'in bulk   '}: loop ${s.loopUs.toFixed(1)} µs ${Math.round(s.loopWal)} B; bulk ${s.bulkUs.toFixed(1)} µs ${Math.round(s.bulkWal)} B a job`);
        }
    }
    const show = (label, xs) => console.log(`${label}: lease+report ${median(xs.map((s) => s.loopUs)).toFixed(1)} µs, ${Math.round(median(xs.map((s) => s.loopWal)))} B WAL a job; ` +
        `bulk step ${median(xs.map((s) => s.bulkUs)).toFixed(1)} µs, ${Math.round(median(xs.map((s) => s.bulkWal)))} B a job`);
    show('search rows written by the report (before 0030)', before);
    show('search rows written in bulk (0030)               ', after);
    show('pg-boss 12 fetch 100 + complete                 ', pgboss);
    const vsBoss = after.map((a, i) => a.loopUs / pgboss[i].loopUs);
    const vsBossBefore = before.map((a, i) => a.loopUs / pgboss[i].loopUs);
    console.log(`lease+report ÷ pg-boss 12, within rounds: row by row ${median(vsBossBefore).toFixed(2)} [${Math.min(...vsBossBefore).toFixed(2)}–${Math.max(...vsBossBefore).toFixed(2)}], ` +
        `in bulk ${median(vsBoss).toFixed(2)} [${Math.min(...vsBoss).toFixed(2)}–${Math.max(...vsBoss).toFixed(2)}]`);
    const ratios = before.map((b, i) => (after[i].loopUs + after[i].bulkUs) / b.loopUs);
    console.log(`in bulk ÷ row by row, CPU with the bulk step counted: ${median(ratios).toFixed(2)} [${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}]`);
}
finally {
    await server.stop();
}
//# sourceMappingURL=search-rows.js.map