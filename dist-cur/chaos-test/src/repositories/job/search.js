import { sql } from 'kysely';
import { filtered, likePattern } from './filter.js';
import { jobFromRow } from './row.js';
import { jobSearchCopiedRanges } from './search-partitions.js';
/**
 * How many of the newest jobs a search by type, group, worker or content (q, argsContains) filters
 * row by row before it asks the indexes of final jobs for the rest: a match that is recent or
 * common is found there in a few milliseconds, which a bitmap of every match in the history would
 * not be; a rare one is found through the indexes whatever the history's size.
 */
export const RECENT_WINDOW = 10_000;
/**
 * How many queued jobs older than the window a content search (q, argsContains) checks row by row
 * for one page. Open jobs have no content index (every enqueue would pay it), so a backlog of
 * hundreds of thousands would take seconds to walk; a page stops after these and says where to go
 * on (see JobSearchPage.resumeBelow).
 */
export const QUEUED_WALK = 10_000;
const FINAL_STATES = ['finished', 'failed', 'dropped', 'cancelled'];
/** Whether the filter searches content (q, argsContains), which open jobs have no index for. */
const searchesContent = (f) => (f.q !== undefined && f.q !== '') || f.argsContains !== undefined;
/** Newest first (id descending): up to `limit` jobs. */
export async function jobSearch(db, f) {
    const page = (jobs, resumeBelow = null) => ({ jobs: jobs.map(jobFromRow), resumeBelow });
    // Filters a rare value of which must not mean a walk through the whole history. (state has its
    // own indexes for the rare states; periodicTaskId has job_task_idx.)
    const selective = searchesContent(f) || f.type !== undefined || f.group !== undefined || f.worker !== undefined;
    if (!selective || f.periodicTaskId !== undefined)
        return page(await newest(db, f, null));
    // 1. The newest RECENT_WINDOW jobs (before the cursor), filtered row by row.
    const before = f.beforeId === undefined ? sql `true` : sql `id < ${f.beforeId}::bigint`;
    const { rows: edge } = await sql `
    SELECT id FROM job WHERE ${before} ORDER BY id DESC OFFSET ${RECENT_WINDOW - 1} LIMIT 1`.execute(db.kysely);
    const floor = edge[0]?.id ?? null;
    const recent = await newest(db, f, floor === null ? null : { from: floor });
    if (recent.length === f.limit || floor === null)
        return page(recent);
    // 2. Older than the window: final jobs through their indexes, open jobs beside them. A content
    // search walks at most QUEUED_WALK queued jobs; past them it shows only what lies above the last
    // one it looked at, so that nothing older comes before a match it has not reached yet.
    const left = f.limit - recent.length;
    const states = f.state === undefined
        ? ['final', 'waiting', 'queued', 'running']
        : [FINAL_STATES.includes(f.state) ? 'final' : f.state];
    const walk = searchesContent(f) && states.includes('queued') ? await queuedWalk(db, floor) : null;
    const stop = walk?.stop ?? null;
    const parts = states.map((which) => which === 'queued' && walk ? walked(db, f, walk.ids, left) : older(db, f, floor, stop, left, which));
    const rest = (await Promise.all(parts))
        .flat()
        .sort((a, b) => (BigInt(b.id) > BigInt(a.id) ? 1 : -1))
        .slice(0, left);
    return page([...recent, ...rest], stop !== null && rest.length < left ? stop : null);
}
/**
 * The newest QUEUED_WALK queued jobs below `floor` (their ids), and where the walk stopped: the last
 * of them when there are more, null when these are all. (One backward scan of job_queued_id_idx,
 * migration 0014, which holds the queued jobs only: a walk of the primary key would step over the
 * history between them.)
 */
async function queuedWalk(db, floor) {
    const { rows } = await sql `
    SELECT id FROM job WHERE state = 'queued' AND id < ${floor}::bigint
     ORDER BY id DESC LIMIT ${QUEUED_WALK}`.execute(db.kysely);
    const ids = rows.map((r) => String(r.id));
    return { ids, stop: ids.length === QUEUED_WALK ? ids[ids.length - 1] : null };
}
/** The filter's queued jobs among `ids`, newest first. */
async function walked(db, f, ids, limit) {
    if (ids.length === 0)
        return [];
    return (await filtered(db, f)
        .selectAll()
        .where('state', '=', 'queued')
        .where(sql `id = ANY (${ids}::bigint[])`)
        .orderBy('id', 'desc')
        .limit(limit)
        .execute());
}
/** The filter's jobs newest first, all of them or only those at or above `window.from`. */
async function newest(db, f, window) {
    let q = filtered(db, f).selectAll();
    if (f.beforeId !== undefined)
        q = q.where(sql `id < ${f.beforeId}::bigint`);
    if (window)
        q = q.where(sql `id >= ${window.from}::bigint`);
    return (await q.orderBy('id', 'desc').limit(f.limit).execute());
}
/**
 * Below `floor` (and at or above `stop`, when set): final jobs, found through job_search by type,
 * group, worker (migration 0017) or content (migration 0013) — the failed, dropped and cancelled
 * ones by type through their own index on job (migration 0009) — or the waiting, queued or running ones,
 * walked through their own partial indexes (one state at a time: with `state IN (queued, running)`
 * the planner may read the whole table).
 */
async function older(db, f, floor, stop, limit, which) {
    const below = (id) => {
        const q = filtered(db, f)
            .selectAll()
            .where(sql `id < ${id}::bigint`);
        return stop === null ? q : q.where(sql `id >= ${stop}::bigint`);
    };
    if (which !== 'final') {
        return (await below(floor).where('state', '=', which).orderBy('id', 'desc').limit(limit).execute());
    }
    const finalJobs = (id) => below(id).where(sql `state IN ('finished', 'failed', 'dropped', 'cancelled')`);
    const content = [];
    if (f.argsContains !== undefined)
        content.push(sql `args @> ${JSON.stringify(f.argsContains)}::jsonb`);
    if (f.q !== undefined && f.q !== '')
        content.push(sql `text ILIKE ${likePattern(f.q)} ESCAPE '\\'`);
    const keys = [];
    if (f.type !== undefined)
        keys.push(sql `type = ${f.type}`);
    if (f.group !== undefined)
        keys.push(sql `group_ = ${f.group}`);
    if (f.worker !== undefined)
        keys.push(sql `worker = ${f.worker}`);
    // The rare final states (failed, dropped, cancelled) have their own indexes on job, by type too:
    // "the failed jobs of this type" must not walk every finished job of the type in job_search.
    const rareState = f.state !== undefined && f.state !== 'finished';
    if (content.length === 0 && (keys.length === 0 || rareState)) {
        return (await finalJobs(floor).orderBy('id', 'desc').limit(limit).execute());
    }
    // The newest matching ids from job_search, a batch at a time, then their jobs with the other
    // filters (each match checked on the job row too, by filtered(): a job retried since it ended is
    // no longer final). By type, group or worker, one backward scan of job_search's B-tree on it (no
    // `stop` there: only a content search walks the queued jobs and stops). By
    // content, the matches are gathered through the GIN indexes before they are ordered
    // (MATERIALIZED), and the id bounds are written `id + 0` so that they cannot be read from the
    // primary key: left to itself, the planner walks job_search's primary key (backwards, or over the
    // id range) testing every row, which for a rare match behind 10 million jobs took seconds.
    const batch = (from) => content.length > 0
        ? sql `
      WITH m AS MATERIALIZED (
        SELECT id FROM job_search
         WHERE ${sql.join(content, sql ` AND `)}
           AND id + 0 < ${from}::bigint AND ${stop === null ? sql `true` : sql `id + 0 >= ${stop}::bigint`})
      SELECT id FROM m ORDER BY id DESC LIMIT ${SEARCH_BATCH}`
        : sql `
      SELECT id FROM job_search WHERE ${sql.join(keys, sql ` AND `)} AND id < ${from}::bigint
       ORDER BY id DESC LIMIT ${SEARCH_BATCH}`;
    // The final jobs of the ranges not copied into job_search yet (migration 0030: the newest slice
    // of ids, and any a backlog holds back) are read on job itself, a batch at a time beside.
    const gaps = uncopied(await jobSearchCopiedRanges(db), stop);
    // One ordered scan per range, through the partial index of final jobs' ids (job_final_id_idx):
    // ORed into one condition, the ranges let the planner read every final job by another index.
    const fromJob = async (from) => {
        const parts = gaps.map(([lo, hi]) => {
            const q = filtered(db, f)
                .select('id')
                .where(sql `id < ${from}::bigint AND state IN ('finished', 'failed', 'dropped', 'cancelled') AND id >= ${lo}::bigint`);
            return (hi === null ? q : q.where(sql `id < ${hi}::bigint`)).orderBy('id', 'desc').limit(SEARCH_BATCH);
        });
        const { rows } = await sql `
      SELECT id FROM (${sql.join(parts.map((p) => sql `(${p})`), sql ` UNION ALL `)}) x ORDER BY id DESC LIMIT ${SEARCH_BATCH}`.execute(db.kysely);
        return rows;
    };
    const found = [];
    for (let from = floor; found.length < limit;) {
        const [indexed, direct] = await Promise.all([batch(from).execute(db.kysely), gaps.length > 0 ? fromJob(from) : []]);
        // the newest SEARCH_BATCH of both (each gave its newest SEARCH_BATCH below `from`)
        const merged = [...new Set([...indexed.rows, ...direct].map((r) => String(r.id)))].sort((a, b) => Number(b) - Number(a));
        const rows = merged.slice(0, SEARCH_BATCH).map((id) => ({ id }));
        if (rows.length === 0)
            break;
        const ids = rows.map((r) => String(r.id));
        const jobs = (await finalJobs(from)
            .where(sql `id = ANY (${ids}::bigint[])`)
            .orderBy('id', 'desc')
            .limit(limit - found.length)
            .execute());
        found.push(...jobs);
        if (rows.length < SEARCH_BATCH)
            break;
        from = ids[ids.length - 1];
    }
    return found;
}
/** How many ids a content search takes from job_search at a time. */
const SEARCH_BATCH = 500;
/**
 * The id ranges not covered by the copied ones (sorted, never overlapping), at or above `stop`:
 * [lo, hi), hi null for no end. The copied slices are mostly contiguous, so the gaps are few (the
 * newest slice and above, and any slice a backlog holds back).
 */
export function uncopied(copied, stop) {
    const gaps = [];
    let at = stop === null ? 0n : BigInt(stop);
    for (const r of copied) {
        const lo = BigInt(r.lo);
        const hi = BigInt(r.hi);
        if (hi <= at)
            continue;
        if (lo > at)
            gaps.push([String(at), String(lo)]);
        at = hi;
    }
    gaps.push([String(at), null]);
    return gaps;
}
//# sourceMappingURL=search.js.map