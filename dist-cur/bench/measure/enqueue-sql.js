/**
 * Enqueueing from SQL: `SELECT jobclock_add_jobs($1)` with 1000 job bodies against the raw
 * multi-row `INSERT INTO job … VALUES (…), … (1000 rows)` of bench row d.raw, in the same run on the
 * same database, batches alternating between the two so both see the same table, indexes and WAL.
 * Each batch is its own autocommitted statement on one connection.
 *
 * Needs only a connection string to a migrated jobclock database (an empty job table is best).
 * Run alone (after `npm run build`): `node dist/bench/measure/enqueue-sql.js` starts an embedded
 * PostgreSQL with its durable defaults, or uses DATABASE_URL (a database it may fill with jobs).
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
/** Measures both ways of adding `batchSize` jobs per statement on the database at `url`. */
export async function measureEnqueueSql(url, opts = {}) {
    const batches = opts.batches ?? 20;
    const warmup = opts.warmupBatches ?? 3;
    const size = opts.batchSize ?? 1000;
    const client = new pg.Client({ connectionString: url, application_name: 'bench-enqueue-sql' });
    await client.connect();
    try {
        const rawText = `INSERT INTO job (type, args, run_at) VALUES ${Array.from({ length: size }, (_, k) => `('bench', $${k + 1}::jsonb, now())`).join(', ')} RETURNING id`;
        const fnText = 'SELECT id FROM jobclock_add_jobs($1::jsonb) AS id';
        let n = 0;
        const raw = async () => {
            const params = Array.from({ length: size }, () => JSON.stringify({ n: n++ }));
            const t0 = performance.now();
            const res = await client.query(rawText, params);
            const ms = performance.now() - t0;
            if (res.rowCount !== size)
                throw new Error(`raw INSERT added ${res.rowCount} of ${size} jobs`);
            return ms;
        };
        const fn = async () => {
            const body = JSON.stringify(Array.from({ length: size }, () => ({ type: 'bench', args: { n: n++ } })));
            const t0 = performance.now();
            const res = await client.query(fnText, [body]);
            const ms = performance.now() - t0;
            if (res.rowCount !== size)
                throw new Error(`jobclock_add_jobs returned ${res.rowCount} of ${size} ids`);
            return ms;
        };
        for (let i = 0; i < warmup; i++) {
            await raw();
            await fn();
        }
        const rawMs = [];
        const fnMs = [];
        for (let i = 0; i < batches; i++) {
            // Alternate which goes first so neither always follows the other's checkpoint or autovacuum.
            if (i % 2 === 0) {
                rawMs.push(await raw());
                fnMs.push(await fn());
            }
            else {
                fnMs.push(await fn());
                rawMs.push(await raw());
            }
        }
        const total = (xs) => xs.reduce((a, b) => a + b, 0);
        const functionJobsPerSec = (batches * size * 1000) / total(fnMs);
        const rawJobsPerSec = (batches * size * 1000) / total(rawMs);
        return {
            functionJobsPerSec,
            rawJobsPerSec,
            ratio: functionJobsPerSec / rawJobsPerSec,
            functionBatchMsP50: median(fnMs),
            rawBatchMsP50: median(rawMs),
            jobsPerKind: batches * size,
        };
    }
    finally {
        await client.end();
    }
}
const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(invokedAs).href) {
    const { startEmbedded } = await import('../../src/db/embedded.js');
    const { createDb, ensureDatabase } = await import('../../src/db/database.js');
    const { migrateToLatest } = await import('../../src/db/migrate.js');
    let url = process.env.DATABASE_URL;
    let stop = async () => { };
    if (!url) {
        const tmp = await mkdtemp(path.join(os.tmpdir(), 'jobclock-enqueue-sql-'));
        await chmod(tmp, 0o755); // the postgres user must be able to enter it when we run as root
        const server = await startEmbedded({ dataDir: path.join(tmp, 'data') });
        url = await ensureDatabase(server.url, 'bench_enqueue_sql');
        stop = async () => {
            await server.stop();
            await rm(tmp, { recursive: true, force: true });
        };
    }
    try {
        const db = createDb({ url, poolSize: 1 });
        await migrateToLatest(db.kysely);
        await db.destroy();
        const r = await measureEnqueueSql(url, { batches: Number(process.env.BATCHES ?? 20) });
        console.log(JSON.stringify(r, null, 2));
    }
    finally {
        await stop();
    }
}
//# sourceMappingURL=enqueue-sql.js.map