import { sql } from 'kysely';
import { filtered } from './filter.js';
import { JOBS_CHANNEL, retryEvents, retrySet } from './sql.js';
/**
 * Queues again up to `limit` failed, dropped or cancelled jobs the filter selects that hold no
 * uniqueKey, in one statement, as POST /jobs/{id}/retry does (jobs with a uniqueKey go one by one
 * through jobRetry, which can tell a key held by another open job). Wakes waiting workers.
 */
export async function jobRetryMatching(db, f, limit, now, actor) {
    const picked = filtered(db, f)
        .select(['id', 'state', 'error'])
        .where('state', 'in', ['failed', 'dropped', 'cancelled'])
        .where('unique_key', 'is', null)
        .orderBy('id')
        .limit(limit)
        .forUpdate()
        .skipLocked();
    const { rows } = await sql `
    WITH old AS MATERIALIZED (${picked}),
    upd AS (
      UPDATE job j SET ${retrySet(now)}
      FROM old WHERE j.id = old.id
      RETURNING j.id
    ),
    events AS (${retryEvents(now, actor, true)}),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, '') FROM upd LIMIT 1)
    SELECT count(*)::int AS n, (SELECT count(*) FROM notify) AS notified FROM upd`.execute(db.kysely);
    return rows[0]?.n ?? 0;
}
/** Ids of failed, dropped or cancelled jobs the filter selects that hold a uniqueKey (for jobRetry one by one). */
export async function jobFindRetryableWithKeys(db, f, limit) {
    const rows = await filtered(db, f)
        .select('id')
        .where('state', 'in', ['failed', 'dropped', 'cancelled'])
        .where('unique_key', 'is not', null)
        .orderBy('id')
        .limit(limit)
        .execute();
    return rows.map((r) => String(r.id));
}
//# sourceMappingURL=retry-matching.js.map