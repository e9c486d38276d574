/**
 * Aggregates for operators (GET /metrics, GET /stats/throughput): bounded queries that read only
 * open jobs, or only the final jobs of a recent window, through partial indexes.
 */
import { sql } from 'kysely';
/** Open jobs per type at `now` (the waiting, queued and running partial indexes; final jobs are never read). */
export async function jobOpenCountsByType(db, now) {
    const { rows } = await sql `
    SELECT type,
           count(*) FILTER (WHERE state = 'queued' AND run_at <= ${now})::int AS queued,
           count(*) FILTER (WHERE state = 'queued' AND run_at > ${now})::int AS scheduled,
           count(*) FILTER (WHERE state = 'running')::int AS running,
           count(*) FILTER (WHERE state = 'waiting')::int AS waiting,
           min(run_at) FILTER (WHERE state = 'queued' AND run_at <= ${now}) AS oldest
      FROM job
     WHERE state IN ('waiting', 'queued', 'running')
     GROUP BY type
     ORDER BY type`.execute(db.kysely);
    return rows.map((r) => ({
        type: r.type,
        queued: r.queued,
        scheduled: r.scheduled,
        running: r.running,
        waiting: r.waiting,
        oldestQueuedAt: r.oldest,
    }));
}
/**
 * Jobs that ended per minute over the `minutes` minutes before `now` (the current minute last),
 * by finished_at through the index retention uses; `type` narrows it. Every minute has a bucket.
 */
export async function jobThroughput(db, now, minutes, type) {
    const end = Math.floor(now.getTime() / 60_000) * 60_000 + 60_000;
    const start = new Date(end - minutes * 60_000);
    const { rows } = await sql `
    SELECT date_trunc('minute', finished_at) AS minute,
           count(*) FILTER (WHERE state = 'finished')::int AS finished,
           count(*) FILTER (WHERE state = 'failed')::int AS failed
      FROM job
     WHERE state IN ('finished', 'failed', 'dropped', 'cancelled') AND finished_at >= ${start} AND finished_at < ${new Date(end)}
       ${type === undefined ? sql `` : sql `AND type = ${type}`}
     GROUP BY 1`.execute(db.kysely);
    const byMinute = new Map(rows.map((r) => [r.minute.getTime(), r]));
    const out = [];
    for (let t = start.getTime(); t < end; t += 60_000) {
        const r = byMinute.get(t);
        out.push({ at: new Date(t), finished: r?.finished ?? 0, failed: r?.failed ?? 0 });
    }
    return out;
}
/**
 * Periodic tasks per health status at `now` (domain/task-health.ts healthOf, first match wins):
 * the disabled, failing and overdue ones through their partial indexes (migration 0021), the rest
 * from the count of all tasks.
 */
export async function taskHealthCounts(db, now) {
    const { rows } = await sql `
    SELECT (SELECT count(*) FROM periodic_task)::int AS total,
           (SELECT count(*) FROM periodic_task WHERE NOT enabled)::int AS disabled,
           (SELECT count(*) FROM periodic_task WHERE overdue_at IS NOT NULL AND overdue_at <= ${now} AND enabled)::int AS overdue,
           (SELECT count(*) FROM periodic_task
             WHERE consecutive_failures > 0 AND enabled AND (overdue_at IS NULL OR overdue_at > ${now}))::int AS failing`.execute(db.kysely);
    const r = rows[0];
    return { ok: r.total - r.disabled - r.overdue - r.failing, failing: r.failing, overdue: r.overdue, disabled: r.disabled };
}
//# sourceMappingURL=stats.js.map