import { sql } from 'kysely';
/**
 * Creates job_search's partitions ahead of the job id sequence and drops those whose id range has
 * no job left (migration 0018's jobclock_search_upkeep). `minWidth`: ids per partition, at least;
 * without it, the function's own default (a million).
 */
export async function jobSearchUpkeep(db, minWidth) {
    const call = minWidth === undefined ? sql `jobclock_search_upkeep()` : sql `jobclock_search_upkeep(${minWidth}::bigint)`;
    const { rows } = await sql `SELECT created, dropped FROM ${call}`.execute(db.kysely);
    return rows[0];
}
/**
 * Merges the pending lists of the GIN indexes of every job_search partition (migration 0020's
 * jobclock_search_flush): the pending pages merged, 0 when another instance is at it.
 */
export async function jobSearchFlush(db) {
    const { rows } = await sql `SELECT jobclock_search_flush() AS pages`.execute(db.kysely);
    return rows[0].pages;
}
/** Ids per slice of job_search that the SearchIndexBuilder seals and copies at a time (migration 0030). */
export const SEARCH_SLICE = 10_000;
/** The slices of job ids due to be sealed and copied (migration 0030's jobclock_search_slices_due), lowest first. */
export async function jobSearchSlicesDue(db, width = SEARCH_SLICE) {
    const { rows } = await sql `SELECT lo, hi FROM jobclock_search_slices_due(${width}::bigint)`.execute(db.kysely);
    return rows.map((r) => ({ lo: Number(r.lo), hi: Number(r.hi) }));
}
/** The id ranges whose final jobs have their search rows in job_search, lowest first (migration 0030). */
export async function jobSearchCopiedRanges(db) {
    const { rows } = await sql `
    SELECT lo::text, hi::text FROM job_search_sealed WHERE copied_at IS NOT NULL ORDER BY lo`.execute(db.kysely);
    return rows;
}
/** How long a seal waits by default for the transactions that began before it, before leaving the copy for a later step. */
export const SEAL_WAIT_MS = 10_000;
/**
 * Fills job_search for `slices` (from jobSearchSlicesDue; migration 0030), on one connection, one
 * instance at a time (a session advisory lock; the others find it busy):
 * 1. seals them: from then on the triggers write the rows of their jobs as they end;
 * 2. waits until every client transaction that was running at the seal has ended (a statement of
 *    theirs may have ended a job of a slice without seeing the seal), then copies the rows of the
 *    final jobs of every range sealed and not copied yet, one statement a range (`copied`: how
 *    many rows; null when those transactions were still running after `wait.maxMs`: a later step
 *    copies).
 */
export async function jobSearchSealAndCopy(db, slices, wait) {
    return db.kysely.connection().execute(async (c) => {
        const { rows } = await sql `SELECT pg_try_advisory_lock(hashtext('jobclock_search_build')) AS got`.execute(c);
        if (!rows[0].got)
            return 'busy';
        try {
            const sealed = slices.length === 0
                ? 0
                : Number((await sql `
                  INSERT INTO job_search_sealed (lo, hi)
                    SELECT * FROM unnest(${slices.map((p) => p.lo)}::bigint[], ${slices.map((p) => p.hi)}::bigint[])
                  ON CONFLICT (lo) DO NOTHING`.execute(c)).numAffectedRows ?? 0);
            const pending = await sql `SELECT lo::text FROM job_search_sealed WHERE copied_at IS NULL ORDER BY lo`.execute(c);
            if (pending.rows.length === 0)
                return { sealed, copied: 0 };
            if (!(await olderTransactionsEnded(c, wait.sleep, wait.maxMs)))
                return { sealed, copied: null };
            let copied = 0;
            for (const p of pending.rows)
                copied += await copyRows(c, p.lo);
            return { sealed, copied };
        }
        finally {
            await sql `SELECT pg_advisory_unlock(hashtext('jobclock_search_build'))`.execute(c);
        }
    });
}
/** Waits (up to maxMs) until the client transactions running now have ended; whether they have. */
async function olderTransactionsEnded(c, sleep, maxMs) {
    const { rows } = await sql `
    SELECT coalesce(array_agg(l.virtualxid), '{}') AS vxids
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'virtualxid' AND l.granted AND l.pid <> pg_backend_pid() AND a.backend_type = 'client backend'`.execute(c);
    const vxids = rows[0].vxids;
    for (let waited = 0; vxids.length > 0; waited += 20) {
        const left = await sql `
      SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'virtualxid' AND granted AND virtualxid = ANY (${vxids}::text[])`.execute(c);
        if (left.rows[0].n === 0)
            return true;
        if (waited >= maxMs)
            return false;
        await sleep(20);
    }
    return true;
}
/** Copies the search rows of a sealed range's final jobs, once (the range marked copied in the same statement); how many. */
async function copyRows(c, lo) {
    const r = await sql `
    WITH claimed AS (
      UPDATE job_search_sealed SET copied_at = now() WHERE lo = ${lo}::bigint AND copied_at IS NULL RETURNING lo, hi)
    INSERT INTO job_search (id, type, group_, worker, args, text)
      SELECT j.id, j.type, j.group_, j.worker, j.args, jobclock_search_text(j.args, j.subject, j.error)
        FROM claimed k JOIN job j ON j.id >= k.lo AND j.id < k.hi
       WHERE j.state IN ('finished', 'failed', 'dropped', 'cancelled')
    ON CONFLICT (id) DO NOTHING`.execute(c);
    return Number(r.numAffectedRows ?? 0);
}
//# sourceMappingURL=search-partitions.js.map