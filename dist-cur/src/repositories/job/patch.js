import { sql } from 'kysely';
import { changeOrExplain } from './change.js';
import { isJobId } from './row.js';
import { JOBS_CHANNEL } from './sql.js';
/** Changes priority and/or runAt of a queued job. A new runAt wakes waiting workers. */
export async function jobPatch(db, id, patch, now, actor = null) {
    if (!isJobId(id))
        return { outcome: 'not_found' };
    const { rows } = await sql `
    WITH upd AS (
      UPDATE job SET
        priority = ${patch.priority === undefined ? sql `priority` : sql `${patch.priority}::int`},
        run_at = ${patch.runAt === undefined ? sql `run_at` : sql `${patch.runAt}::timestamptz`},
        updated_at = ${now}
      WHERE id = ${id}::bigint AND state = 'queued'
      RETURNING *
    ),
    notify AS (SELECT pg_notify(${JOBS_CHANNEL}, (extract(epoch FROM run_at) * 1000)::bigint::text) FROM upd WHERE ${patch.runAt !== undefined}),
    events AS (
      INSERT INTO job_event (job_id, at, kind, actor, detail)
      SELECT u.id, ${now}, 'patched', ${actor},
             jsonb_strip_nulls(jsonb_build_object('priority', ${patch.priority ?? null}::int,
               'runAt', ${patch.runAt === undefined ? null : patch.runAt.toISOString()}::text))
      FROM upd u
    )
    SELECT u.*, (SELECT count(*) FROM notify) AS notified FROM upd u`.execute(db.kysely);
    return changeOrExplain(db, id, rows);
}
//# sourceMappingURL=patch.js.map