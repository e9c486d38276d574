import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { INSERT_COLUMNS, insertRecords } from './insert-many.js';
import { insertedJob } from './insert.js';
/**
 * Marks existing jobs as depended on and returns their states, read under the row locks taken
 * (in id order, as migration 0026's trigger takes them): a report ending one of them waits for this transaction, and its trigger (migration 0026)
 * then sees the edges this transaction adds; a report that committed first is seen here as the
 * job's final state. Ids that name no job are missing from the answer.
 */
export async function jobMarkDependedOn(db, ids) {
    if (ids.length === 0)
        return new Map();
    // a job already marked is not written again
    const { rows } = await sql `
    WITH locked AS MATERIALIZED (
      SELECT id, state, has_dependents FROM job WHERE id = ANY (${ids}::bigint[]) ORDER BY id FOR UPDATE
    ),
    marked AS (UPDATE job j SET has_dependents = true FROM locked l WHERE j.id = l.id AND NOT l.has_dependents)
    SELECT l.id::text AS id, l.state FROM locked l`.execute(db.kysely);
    return new Map(rows.map((r) => [r.id, r.state]));
}
/** Draws `n` job ids, for a graph whose jobs name one another before they are inserted. */
export async function jobDrawIds(db, n) {
    const { rows } = await sql `
    SELECT nextval(pg_get_serial_sequence('job', 'id'))::text AS id FROM generate_series(1, ${n}::int)`.execute(db.kysely);
    return rows.map((r) => r.id);
}
/**
 * Inserts the jobs of a graph in ONE statement: each in the state it starts in (waiting with its
 * count of open dependencies, or cancelled with its history entry when a dependency had already
 * ended badly), with its `after`, and the edges. Returns the jobs in input order.
 */
export async function jobInsertGraph(db, jobs, now) {
    if (jobs.length === 0)
        return [];
    const records = insertRecords(jobs.map((j) => j.row));
    const input = JSON.stringify(jobs.map((j, i) => ({
        ...records[i],
        id: j.id,
        after: j.after.length > 0 ? j.after : null,
        runs: j.runs,
        state: j.state,
        pending: j.state === 'waiting' ? j.pending : null,
        depended_on: j.dependedOn,
        failed: j.failedDependency,
    })));
    const n = sql `${now}::timestamptz`;
    await sql `
    WITH input AS MATERIALIZED (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb)
        AS i(${INSERT_COLUMNS}, id bigint, after bigint[], runs boolean, state text, pending int, depended_on boolean, failed text)
    ),
    ins AS (
      INSERT INTO job (id, type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, start_by,
                       state, after_ids, deps_pending, dependency_failure_runs, has_dependents, finished_at, created_at, updated_at)
      OVERRIDING SYSTEM VALUE
      SELECT id, type, group_, args, subject, submitter, priority, run_at, max_attempts, timebox, traceparent, start_by,
             state, after, pending, runs, depended_on, CASE WHEN state = 'cancelled' THEN ${n} END, ${n}, ${n}
      FROM input ORDER BY ord
    ),
    edges AS (
      INSERT INTO job_dependency (depends_on, job_id)
      SELECT a.dep, i.id FROM input i CROSS JOIN LATERAL unnest(i.after) AS a(dep)
    )
    INSERT INTO job_event (job_id, at, kind, detail)
    SELECT i.id, ${n}, 'cancelled', jsonb_build_object('from', 'waiting', 'reason', 'dependency-failed', 'dependency', i.failed)
    FROM input i WHERE i.state = 'cancelled'`.execute(db.kysely);
    return jobs.map((j) => {
        const job = insertedJob(j.row, j.id, now);
        job.after = [...j.after];
        job.onDependencyFailure = j.runs ? 'run' : 'cancel';
        job.state = j.state;
        if (j.state === 'cancelled')
            job.finishedAt = now;
        return job;
    });
}
/**
 * How the given jobs stand, for the leases of the jobs that run after them (a prepared statement:
 * it runs beside every lease of a job with dependencies).
 */
export async function jobDependencyOutcomes(db, ids) {
    if (ids.length === 0)
        return new Map();
    const rows = await compiledOnce(db, 'dependency-outcomes', { ids }, (v) => sql `
    SELECT id::text AS id, type, state, result FROM job WHERE id = ANY (${v.ids}::bigint[])`);
    return new Map(rows.map((r) => [r.id, { id: r.id, type: r.type, state: r.state, result: r.result ?? null }]));
}
/** The jobs that run after `id` (its dependents), oldest first, at most `limit`, and how many there are. */
export async function jobDependents(db, id, limit) {
    const { rows } = await sql `
    SELECT j.id::text AS id, j.type, j.state, j.finished_at, count(*) OVER ()::int AS total
    FROM job_dependency e JOIN job j ON j.id = e.job_id
    WHERE e.depends_on = ${id}::bigint
    ORDER BY e.job_id LIMIT ${limit}`.execute(db.kysely);
    return { items: rows.map((r) => ({ id: r.id, type: r.type, state: r.state, finishedAt: r.finished_at })), total: rows[0]?.total ?? 0 };
}
/** The given jobs (a job's dependencies), in the order given; ids of deleted jobs are left out. */
export async function jobNeighbours(db, ids) {
    if (ids.length === 0)
        return [];
    const { rows } = await sql `
    SELECT id::text AS id, type, state, finished_at FROM job WHERE id = ANY (${ids}::bigint[])`.execute(db.kysely);
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.flatMap((i) => {
        const r = byId.get(i);
        return r ? [{ id: r.id, type: r.type, state: r.state, finishedAt: r.finished_at }] : [];
    });
}
//# sourceMappingURL=dependencies.js.map