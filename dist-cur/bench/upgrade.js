/**
 * `node dist/bench/upgrade.js`: how long an upgrade holds the job table. A database at migration
 * UPGRADE_FROM (default 0020) is filled with UPGRADE_JOBS (default 1,000,000) jobs — 97 % final,
 * 2 % queued, 1 % running, over 50 types and 1,000 groups — and 1,000 periodic tasks, then migrated to
 * the latest schema the way a start does (all pending migrations in one transaction). Meanwhile a
 * probe reads one job and creates one every 50 ms, each on its own connection, as an instance of the
 * previous release would: the longest each waited is how long the upgrade kept the job table from
 * them. Then each migration alone, on a copy made before, for where the time goes.
 */
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { createDb } from '../src/db/database.js';
import { migrateToLatest, migrationsDir } from '../src/db/migrate.js';
import { migrateWithRetry } from '../src/runtime.js';
import { BenchServer } from './lib/postgres.js';
const JOBS = Number(process.env.UPGRADE_JOBS ?? 1_000_000);
const FROM = process.env.UPGRADE_FROM ?? '0020';
const log = (m) => process.stderr.write(`${m}\n`);
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;
/** A copy of migrations/ holding the numbered files up to and including `last`. */
async function migrationsThrough(tmp, last) {
    const dir = path.join(tmp, `through-${last}`);
    await cp(migrationsDir(), dir, { recursive: true });
    for (const f of await readdir(dir))
        if (/^\d{4}_/.test(f) && f.slice(0, 4) > last)
            await rm(path.join(dir, f));
    return dir;
}
/** Runs `probe` every 50 ms until stopped; the longest it took, in ms, and the errors it met. */
function probing(url, probe) {
    let running = true;
    let longest = 0;
    const errors = [];
    const loop = (async () => {
        const c = new pg.Client({ connectionString: url, application_name: 'upgrade-probe' });
        await c.connect();
        try {
            while (running) {
                const t = performance.now();
                await c.query(probe).catch((err) => errors.push(err.message));
                longest = Math.max(longest, performance.now() - t);
                await new Promise((r) => setTimeout(r, 50));
            }
        }
        finally {
            await c.end();
        }
    })();
    return {
        async stop() {
            running = false;
            await loop;
            return { longest, errors };
        },
    };
}
const server = await BenchServer.start();
const tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-upgrade-'));
try {
    const template = await server.createDatabase(undefined, 'upgrade_from');
    const tdb = createDb({ url: template.url, poolSize: 2 });
    await migrateToLatest(tdb.kysely, await migrationsThrough(tmp, FROM));
    let t = performance.now();
    await template.exec(`INSERT INTO periodic_task (id, task, timer, nextrun, created)
     SELECT 'task-' || g, 'report.' || (g % 50), 'every 1h', now() + interval '1 hour', now() FROM generate_series(1, 1000) g`);
    await template.exec(`INSERT INTO job (type, group_, args, subject, state, run_at, attempts, worker, lease_token, lease_expires_at, started_at, finished_at)
     SELECT 'type.' || (g % 50), 'group-' || (g % 1000), jsonb_build_object('n', g, 'customer', 'c-' || (g % 9973)), 'job ' || g,
            s, now() - interval '1 day' + g * interval '1 ms', CASE WHEN s = 'queued' THEN 0 ELSE 1 END,
            CASE WHEN s = 'queued' THEN NULL ELSE 'w-' || (g % 20) END,
            CASE WHEN s = 'queued' THEN NULL ELSE gen_random_uuid() END,
            CASE WHEN s = 'running' THEN now() + interval '1 hour' END,
            CASE WHEN s = 'queued' THEN NULL ELSE now() - interval '1 day' + g * interval '1 ms' END,
            CASE WHEN s IN ('finished', 'failed') THEN now() - interval '1 day' + g * interval '1 ms' END
     FROM (SELECT g, CASE WHEN g % 100 < 97 THEN (CASE WHEN g % 10 = 0 THEN 'failed' ELSE 'finished' END)
                          WHEN g % 100 < 99 THEN 'queued' ELSE 'running' END AS s
           FROM generate_series(1, $1::int) g) x`, [JOBS]);
    await template.exec('VACUUM ANALYZE job');
    await tdb.destroy();
    log(`${JOBS.toLocaleString('en-US')} jobs at migration ${FROM} in ${secs(performance.now() - t)}`);
    const steps = server.createDatabase(template.name, 'upgrade_steps');
    const whole = await server.createDatabase(template.name, 'upgrade_whole');
    await server.admin((c) => c.query('CHECKPOINT'));
    // the upgrade as a start runs it, probed as an instance of the previous release would use the table
    const db = createDb({ url: whole.url, poolSize: 2 });
    const reads = probing(whole.url, 'SELECT state FROM job WHERE id = 1');
    const writes = probing(whole.url, `INSERT INTO job (type, run_at) VALUES ('probe', now())`);
    await new Promise((r) => setTimeout(r, 200));
    const names = async () => (await db.pool.query('SELECT name FROM kysely_migration ORDER BY name')).rows.map((r) => r.name);
    const had = new Set(await names());
    // a start's path: the warnings of an upgrade tried again are printed
    const logger = pino({ level: 'warn' }, { write: (l) => void log(`  ${l.trim()}`) });
    t = performance.now();
    await migrateWithRetry(db, logger, new AbortController().signal);
    const took = performance.now() - t;
    const applied = (await names()).filter((n) => !had.has(n));
    const [read, write] = [await reads.stop(), await writes.stop()];
    await db.destroy();
    log(`${applied.length} migrations (${applied[0]} … ${applied.at(-1)}) in one transaction, as a start runs them: ${secs(took)}`);
    log(`meanwhile the longest wait of a read of one job: ${secs(read.longest)}; of a new job: ${secs(write.longest)}`);
    for (const [what, p] of [
        ['read', read],
        ['new job', write],
    ])
        if (p.errors.length)
            log(`  ${what} errors: ${p.errors.join('; ')}`);
    // each migration alone, for where the time went
    const each = await steps;
    const sdb = createDb({ url: each.url, poolSize: 2 });
    for (const name of applied) {
        const s = performance.now();
        await migrateToLatest(sdb.kysely, await migrationsThrough(tmp, name.slice(0, 4)));
        const ms = performance.now() - s;
        if (ms >= 100)
            log(`  ${name}: ${secs(ms)}`);
    }
    await sdb.destroy();
}
finally {
    await server.stop();
    await rm(tmp, { recursive: true, force: true });
}
//# sourceMappingURL=upgrade.js.map