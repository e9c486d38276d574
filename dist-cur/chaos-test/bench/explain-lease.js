import { createDb } from '../src/db/database.js';
import { jobLease, jobLeaseFull, jobLeaseSlim, jobReport } from '../src/repositories/jobs.js';
import { BenchServer } from './lib/postgres.js';
import { Templates } from './lib/templates.js';
import { CLAIM } from './measure/worker-protocol.js';
const log = (m) => process.stderr.write(`${m}\n`);
const server = await BenchServer.start();
try {
    const templates = new Templates(server, Number(process.env.EXPLAIN_JOBS ?? 20_000), 10, log);
    const fresh = await server.createDatabase(await templates.jobclockJobs());
    await fresh.settle();
    const db = createDb({ url: fresh.url, poolSize: 2 });
    if (process.env.EXPLAIN_GROUPS) {
        await db.pool.query(`UPDATE job SET group_ = 'g' || (id % ${Number(process.env.EXPLAIN_GROUPS)})`);
        await db.pool.query('VACUUM FULL job');
        await db.pool.query('ANALYZE job');
    }
    // EXPLAIN_DEFAULT=n: groups-default concurrency n (b.seq rows), before the warm-up (which then
    // leaves permits behind, released, as a worker loop does)
    if (process.env.EXPLAIN_DEFAULT) {
        await db.pool.query(`INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', $1, now())`, [
            Number(process.env.EXPLAIN_DEFAULT),
        ]);
    }
    // EXPLAIN_WARM=n: n leases and reports of 100 first, as a worker loop leaves the table (dead
    // index entries of the jobs that left the queue, not yet vacuumed)
    for (let i = 0; i < Number(process.env.EXPLAIN_WARM ?? 0); i++) {
        const { leased } = await jobLease(db, {
            now: new Date(),
            types: ['noop'],
            slots: [...Array(100)].map(() => ({ worker: 'warm', leaseMs: 30_000 })),
        });
        const reports = leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished', jitter: 1 }));
        await jobReport(db, reports, new Date(), { jobs: false });
    }
    const client = await fresh.client('bench-explain');
    client.on('error', () => undefined);
    await client.query('SET plan_cache_mode = force_generic_plan');
    // The statement as jobLease sends it: its text and values, captured on the way out.
    const captured = [];
    const original = db.protocol.query.bind(db.protocol);
    let dryRun = false; // capture without running
    db.protocol.query = (q) => {
        captured.push({ text: q.text, values: q.values });
        return dryRun ? Promise.resolve({ rows: [] }) : original(q);
    };
    if (process.env.EXPLAIN_POLICY) {
        await client.query(`insert into flow_policy (kind, name, concurrency, rate_limit, rate_window_ms, updated_at) values ('type', 'noop', 1000, 50000, 1000, now())`);
        await client.query(`insert into flow_slot (kind, name, n) select 'type', 'noop', g from generate_series(1, 1000) g`);
        await client.query(`insert into flow_token (kind, name, n) select 'type', 'noop', g from generate_series(1, 50000) g`);
        await client.query('analyze flow_policy, flow_slot, flow_token');
    }
    const slots = Array.from({ length: 100 }, () => ({ worker: 'explain', leaseMs: 30_000 }));
    // captured, not run (a statement that stands aside captures as well)
    dryRun = true;
    await jobLeaseSlim(db, { now: new Date(), slots });
    await jobLeaseSlim(db, { now: new Date(), types: ['noop'], slots });
    await jobLeaseFull(db, { now: new Date(), slots });
    await jobLeaseFull(db, { now: new Date(), types: ['noop'], slots });
    dryRun = false;
    const leased = await jobLease(db, { now: new Date(), types: ['noop'], slots });
    // The report statement of POST /jobs/reports (without the jobs) for the jobs leased just now,
    // captured, not run: it is explained below, where it finishes them.
    const reportAt = captured.length;
    dryRun = true;
    await jobReport(db, leased.leased.map((j) => ({ id: j.id, leaseToken: j.leaseToken, outcome: 'finished', jitter: 1 })), new Date(), { jobs: false });
    dryRun = false;
    const cases = [
        ['slim claim, no filter', captured[0].text, captured[0].values],
        ['slim claim, types ["noop"]', captured[1].text, captured[1].values],
        ['full lease statement, no filter', captured[2].text, captured[2].values],
        ['full lease statement, types ["noop"]', captured[3].text, captured[3].values],
        ['raw claim of (a)', CLAIM, [100, 'raw']],
        ['jobclock report of 100 finished jobs', captured[reportAt].text, captured[reportAt].values],
    ];
    for (const [i, [label, text, values]] of cases.entries()) {
        const name = `explain_${i}`;
        const current = () => values.map((v) => (v instanceof Date ? new Date() : v));
        // Prepared (the report: with no jobs, so that it finishes its jobs only when explained), then
        // EXPLAIN EXECUTE under force_generic_plan: the plan a worker gets.
        // prepared with values that change nothing: the report with no jobs (empty arrays)
        const report = label.startsWith('jobclock report');
        await client.query({ name, text, values: report ? current().map((v) => (Array.isArray(v) ? [] : v)) : current() });
        const now = current();
        // EXECUTE takes no bind parameters: the values go in as literals.
        const literal = (v) => v === null || v === undefined
            ? 'NULL'
            : v instanceof Date
                ? client.escapeLiteral(v.toISOString())
                : Array.isArray(v)
                    ? client.escapeLiteral(`{${v.map((x) => (x === null ? 'NULL' : `"${String(x).replace(/[\\"]/g, '\\$&')}"`)).join(',')}}`)
                    : typeof v === 'number' || typeof v === 'boolean'
                        ? String(v)
                        : client.escapeLiteral(typeof v === 'string' ? v : JSON.stringify(v));
        const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE ${name}(${now.map(literal).join(', ')})`);
        console.log(`\n=== ${label}\n${rows.map((r) => r['QUERY PLAN']).join('\n')}`);
    }
    await client.end();
    await db.destroy();
    await fresh.retire();
}
catch (err) {
    console.error(err);
    process.exitCode = 1;
}
finally {
    await server.stop();
}
//# sourceMappingURL=explain-lease.js.map