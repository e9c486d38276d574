import { sql } from 'kysely';
/** Escapes LIKE's wildcards so that `q` matches literally. */
export function likePattern(text) {
    return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
/** The rows of `job` a filter selects, as a Kysely query to refine. */
export function filtered(db, f) {
    let q = db.kysely.selectFrom('job');
    if (f.state !== undefined)
        q = q.where('state', '=', f.state);
    if (f.type !== undefined)
        q = q.where('type', '=', f.type);
    if (f.group !== undefined)
        q = q.where('group_', '=', f.group);
    if (f.periodicTaskId !== undefined)
        q = q.where('periodic_task_id', '=', f.periodicTaskId);
    if (f.worker !== undefined)
        q = q.where('worker', '=', f.worker);
    if (f.createdAfter !== undefined)
        q = q.where('created_at', '>=', f.createdAfter);
    if (f.createdBefore !== undefined)
        q = q.where('created_at', '<', f.createdBefore);
    if (f.argsContains !== undefined)
        q = q.where(sql `args @> ${JSON.stringify(f.argsContains)}::jsonb`);
    if (f.q !== undefined && f.q !== '') {
        const p = likePattern(f.q);
        q = q.where(sql `(args::text ILIKE ${p} ESCAPE '\\' OR subject ILIKE ${p} ESCAPE '\\' OR error::text ILIKE ${p} ESCAPE '\\')`);
    }
    return q;
}
//# sourceMappingURL=filter.js.map