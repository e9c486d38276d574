import { sql } from 'kysely';
/**
 * Deletes up to `limit` final jobs that finished before `before`, but not one that a job still
 * waiting, queued or running runs after (its result is handed to that job's lease). The edges of
 * the dependency graph go with the jobs; jobs outside any graph probe nothing for them. Returns how many.
 */
export async function jobDeleteOld(db, before, limit) {
    const { rows } = await sql `
    WITH gone AS (
      DELETE FROM job WHERE id IN (
        SELECT id FROM job
        WHERE state IN ('finished', 'failed', 'dropped', 'cancelled') AND finished_at < ${before}::timestamptz
          AND NOT (has_dependents AND EXISTS (
            SELECT 1 FROM job_dependency e JOIN job w ON w.id = e.job_id
            WHERE e.depends_on = job.id AND w.state IN ('waiting', 'queued', 'running')))
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      RETURNING id, has_dependents, after_ids
    ),
    events AS (DELETE FROM job_event e USING gone g WHERE e.job_id = g.id),
    edges_out AS (DELETE FROM job_dependency e USING gone g WHERE g.has_dependents AND e.depends_on = g.id),
    edges_in AS (DELETE FROM job_dependency e USING gone g CROSS JOIN LATERAL unnest(g.after_ids) AS a(dep)
                 WHERE e.depends_on = a.dep AND e.job_id = g.id)
    SELECT count(*)::int AS deleted FROM gone`.execute(db.kysely);
    return rows[0]?.deleted ?? 0;
}
//# sourceMappingURL=delete-old.js.map