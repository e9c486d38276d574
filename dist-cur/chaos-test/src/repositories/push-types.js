/** Push types (migration 0025): job types whose jobs jobclock POSTs to a URL itself. */
import { sql } from 'kysely';
import { CHANNELS } from '../db/notifications.js';
const fromRow = (r) => ({
    type: r.type,
    url: r.url,
    secret: r.secret,
    timeoutMs: Number(r.timeout_ms),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
});
/** The push settings of these types (all of them when `types` is undefined), by type. */
export async function pushTypesOf(db, types) {
    const { rows } = await sql `
    SELECT type, url, secret, timeout_ms, created_at, updated_at FROM push_type
    WHERE ${types === undefined ? sql `true` : sql `type = ANY(${[...new Set(types)]}::text[])`}
    ORDER BY type`.execute(db.kysely);
    return new Map(rows.map((r) => [r.type, fromRow(r)]));
}
/**
 * Sets a type's push (`secret` undefined keeps the stored one, which must then exist), or removes
 * it (null); tells every instance's delivery engine through the push-types channel.
 */
export async function pushTypeSet(db, type, p, now) {
    if (p === null) {
        await sql `DELETE FROM push_type WHERE type = ${type}`.execute(db.kysely);
    }
    else {
        await sql `
      INSERT INTO push_type (type, url, secret, timeout_ms, created_at, updated_at)
      VALUES (${type}, ${p.url}, ${p.secret ?? ''}, ${p.timeoutMs}::bigint, ${now}::timestamptz, ${now}::timestamptz)
      ON CONFLICT (type) DO UPDATE SET url = EXCLUDED.url, timeout_ms = EXCLUDED.timeout_ms, updated_at = EXCLUDED.updated_at,
        secret = ${p.secret === undefined ? sql `push_type.secret` : sql `EXCLUDED.secret`}`.execute(db.kysely);
    }
    await sql `SELECT pg_notify(${CHANNELS.pushTypes}, ${type})`.execute(db.kysely);
}
//# sourceMappingURL=push-types.js.map