import { sql } from 'kysely';
import { filtered } from './filter.js';
import { cancelEvents, cancelSet } from './sql.js';
/**
 * Cancels up to `limit` queued or running jobs the filter selects, in one statement (the caller
 * repeats it in bounded batches: no transaction holds many rows for long). Rows another statement
 * holds are skipped, never waited for. Each gets a history entry with the actor. Returns how many,
 * and how many of them belong to periodic tasks.
 */
export async function jobCancelMatching(db, f, limit, now, actor) {
    const picked = filtered(db, f)
        .select(['id', 'state', 'attempts', 'worker'])
        .where('state', 'in', ['waiting', 'queued', 'running'])
        .orderBy('id')
        .limit(limit)
        .forUpdate()
        .skipLocked();
    const { rows } = await sql `
    WITH old AS MATERIALIZED (${picked}),
    upd AS (
      UPDATE job j SET ${cancelSet(now)}
      FROM old WHERE j.id = old.id
      RETURNING j.id, j.periodic_task_id
    ),
    events AS (${cancelEvents(now, actor, sql `jsonb_build_object('from', old.state, 'bulk', true)`)})
    SELECT count(*)::int AS n, count(periodic_task_id)::int AS of_tasks FROM upd`.execute(db.kysely);
    return { cancelled: rows[0]?.n ?? 0, ofTasks: rows[0]?.of_tasks ?? 0 };
}
//# sourceMappingURL=cancel-matching.js.map