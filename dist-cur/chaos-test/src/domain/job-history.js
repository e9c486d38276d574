/** Stored kinds that end an attempt; their detail carries the attempt's `startedAt`. */
const ATTEMPT_ENDS = new Set(['requeued', 'failed', 'lease-expired', 'timed-out', 'given-back']);
const ORDER = { created: 0, leased: 1 };
function startedAtOf(detail) {
    const v = detail?.startedAt;
    return typeof v === 'string' ? v : null;
}
export function jobHistory(job, stored) {
    const out = [
        { at: job.createdAt, kind: 'created', attempt: null, worker: null, actor: null, detail: { runAt: job.runAt.toISOString() } },
    ];
    const endedStarts = new Set();
    for (const e of stored) {
        const started = ATTEMPT_ENDS.has(e.kind) ? startedAtOf(e.detail) : null;
        if (started !== null) {
            endedStarts.add(started);
            out.push({ at: new Date(started), kind: 'leased', attempt: e.attempt, worker: e.worker, actor: null, detail: null });
        }
        out.push(e);
    }
    // the current (or last) lease, unless a stored event already ended it
    if (job.startedAt !== null && !endedStarts.has(job.startedAt.toISOString())) {
        out.push({
            at: job.startedAt,
            kind: 'leased',
            attempt: job.attempts,
            worker: job.worker,
            actor: null,
            detail: { leaseExpiresAt: job.leaseExpiresAt?.toISOString() ?? null, deadline: job.deadline?.toISOString() ?? null },
        });
    }
    if (job.state === 'finished' && job.finishedAt !== null) {
        out.push({ at: job.finishedAt, kind: 'finished', attempt: job.attempts, worker: job.worker, actor: null, detail: null });
    }
    if (job.state === 'dropped' && job.finishedAt !== null && !stored.some((e) => e.kind === 'dropped')) {
        out.push({ at: job.finishedAt, kind: 'dropped', attempt: null, worker: null, actor: null, detail: { error: job.error } });
    }
    // stable: equal times keep created, leased first, then the order events were stored in
    return out
        .map((e, i) => ({ e, i }))
        .sort((a, b) => a.e.at.getTime() - b.e.at.getTime() || (ORDER[a.e.kind] ?? 2) - (ORDER[b.e.kind] ?? 2) || a.i - b.i)
        .map((x) => x.e);
}
//# sourceMappingURL=job-history.js.map