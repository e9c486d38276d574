import { sql } from 'kysely';
import { jobCols, jobFromRow } from './row.js';
import { ms, OPEN } from './sql.js';
/**
 * The job holding each key for a creation with uniqueFor: its open (queued or running) job, else
 * the newest job, final ones included, created within `forMs` before `now`. By key.
 */
export async function jobFindRecentByUniqueKeys(db, keys, now) {
    if (keys.length === 0)
        return new Map();
    const { rows } = await sql `
    SELECT ${jobCols('h')}
    FROM unnest(${keys.map((k) => k.key)}::text[], ${keys.map((k) => k.forMs)}::bigint[]) AS k(key, for_ms)
    CROSS JOIN LATERAL (
      SELECT * FROM job x
      WHERE x.unique_key = k.key AND (x.state IN ${OPEN} OR x.created_at > ${now}::timestamptz - ${ms(sql `k.for_ms`)})
      ORDER BY x.state IN ${OPEN} DESC, x.created_at DESC, x.id DESC
      LIMIT 1
    ) h`.execute(db.kysely);
    return new Map(rows.map((r) => [r.unique_key, jobFromRow(r)]));
}
//# sourceMappingURL=find-recent-by-unique-keys.js.map