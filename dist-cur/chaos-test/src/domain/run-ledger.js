import { slotsBefore } from './slots.js';
export const RUN_OUTCOMES = ['pending', 'finished', 'failed', 'dropped', 'cancelled', 'skipped', 'missed'];
const OPEN = ['queued', 'running'];
function outcomeOf(state) {
    return OPEN.includes(state) ? 'pending' : state;
}
function jobDetail(state, error) {
    if (state === 'queued' || state === 'running' || state === 'finished' || error === null || error === undefined)
        return {};
    const reason = typeof error === 'object' && error !== null && 'reason' in error ? error.reason : undefined;
    return reason === undefined ? { error } : { reason, error };
}
/**
 * The upper bound of the page (inclusive): the cursor's slot, or `to`, never past now. A triggered
 * job is a moment of its own beside a slot at the same time (rank 1 before rank 0).
 */
export function ledgerUpTo(now, to, cursor) {
    const top = Math.min(now.getTime(), to?.getTime() ?? Number.POSITIVE_INFINITY);
    return new Date(cursor === null ? top : Math.min(top, cursor.slot.getTime()));
}
/** How many of each source a page of `limit` reads: enough to know whether another page follows. */
export const ledgerReadLimit = (limit) => limit + 2;
/** Merges the sources into one page of at most `limit` entries in [from, upTo], after `cursor`. */
export function ledgerPage(src, p) {
    const n = ledgerReadLimit(p.limit);
    const end = new Date(p.upTo.getTime() + 1); // slotsBefore takes an exclusive bound
    const byKey = new Map();
    const put = (rank, entry, fromJob) => {
        const key = `${entry.slot.getTime()}:${rank}`;
        const had = byKey.get(key);
        if (had === undefined || (fromJob && !had.fromJob))
            byKey.set(key, { rank, entry, fromJob });
    };
    for (const j of src.jobs) {
        put(0, {
            slot: j.slot,
            outcome: outcomeOf(j.state),
            jobId: j.id,
            attempts: j.attempts,
            startedAt: j.startedAt,
            finishedAt: j.finishedAt,
            detail: jobDetail(j.state, j.error),
        }, true);
    }
    const gap = (slot, r) => ({
        slot,
        outcome: r.outcome,
        jobId: null,
        attempts: null,
        startedAt: null,
        finishedAt: null,
        detail: r.outcome === 'skipped' && r.jobId !== null ? { blockedBy: r.jobId } : {},
    });
    for (const r of src.records) {
        if (r.outcome === 'triggered') {
            if (r.job === null || r.jobId === null)
                continue; // its job is gone with retention
            put(1, {
                slot: r.slot,
                outcome: outcomeOf(r.job.state),
                jobId: r.jobId,
                attempts: r.job.attempts,
                startedAt: r.job.startedAt,
                finishedAt: r.job.finishedAt,
                detail: { trigger: true, ...jobDetail(r.job.state, r.job.error) },
            }, false);
        }
        else if (r.slots === 1 || r.schedule === null) {
            if (r.slot.getTime() >= p.from.getTime() && r.slot.getTime() <= p.upTo.getTime())
                put(0, gap(r.slot, r), false);
        }
        else {
            const before = new Date(Math.min(end.getTime(), r.lastSlot.getTime() + 1));
            const lowest = new Date(Math.max(r.slot.getTime(), p.from.getTime()));
            for (const s of slotsBefore(r.schedule.schedule, r.schedule.ctx, before, lowest, n))
                put(0, gap(s, r), false);
        }
    }
    const cur = src.current;
    if (cur !== null && cur.nextRun !== null && cur.nextRun.getTime() <= p.upTo.getTime()) {
        const lowest = new Date(Math.max(cur.nextRun.getTime(), p.from.getTime()));
        for (const s of slotsBefore(cur.schedule, cur.ctx, end, lowest, n)) {
            put(0, { slot: s, outcome: 'pending', jobId: null, attempts: null, startedAt: null, finishedAt: null, detail: { due: true } }, false);
        }
    }
    const c = p.cursor;
    const sorted = [...byKey.values()]
        .filter((x) => c === null || x.entry.slot.getTime() < c.slot.getTime() || (x.entry.slot.getTime() === c.slot.getTime() && x.rank < c.rank))
        .sort((a, b) => b.entry.slot.getTime() - a.entry.slot.getTime() || b.rank - a.rank);
    const page = sorted.slice(0, p.limit);
    const last = page[page.length - 1];
    return {
        items: page.map((x) => x.entry),
        next: sorted.length > p.limit && last !== undefined ? { slot: last.entry.slot, rank: last.rank } : null,
    };
}
//# sourceMappingURL=run-ledger.js.map