import { sql } from 'kysely';
const num = (v) => (v === null ? undefined : Number(v));
const fromRow = (r) => Object.fromEntries(Object.entries({
    maxAttempts: r.max_attempts ?? undefined,
    timebox: num(r.timebox),
    lease: num(r.lease),
    priority: r.priority ?? undefined,
    startWithin: num(r.start_within),
}).filter(([, v]) => v !== undefined));
/** The defaults of these types, by type (types without defaults are absent). */
export async function typeDefaultsOf(db, types) {
    if (types.length === 0)
        return new Map();
    const { rows } = await sql `
    SELECT type, max_attempts, timebox, lease, priority, start_within FROM job_type_defaults WHERE type = ANY(${[...new Set(types)]}::text[])`.execute(db.kysely);
    return new Map(rows.map((r) => [r.type, fromRow(r)]));
}
/** Replaces a type's defaults; null removes them. */
export async function typeDefaultsSet(db, type, d, now) {
    if (d === null) {
        await sql `DELETE FROM job_type_defaults WHERE type = ${type}`.execute(db.kysely);
        return;
    }
    await sql `
    INSERT INTO job_type_defaults (type, max_attempts, timebox, lease, priority, start_within, updated_at)
    VALUES (${type}, ${d.maxAttempts ?? null}::int, ${d.timebox ?? null}::bigint, ${d.lease ?? null}::bigint, ${d.priority ?? null}::int,
            ${d.startWithin ?? null}::bigint, ${now})
    ON CONFLICT (type) DO UPDATE SET max_attempts = EXCLUDED.max_attempts, timebox = EXCLUDED.timebox, lease = EXCLUDED.lease,
      priority = EXCLUDED.priority, start_within = EXCLUDED.start_within, updated_at = EXCLUDED.updated_at`.execute(db.kysely);
}
//# sourceMappingURL=type-defaults.js.map