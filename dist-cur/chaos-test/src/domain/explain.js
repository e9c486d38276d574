/**
 * Why a job is not running (GET /jobs/{id}/explain): pure, from the job and the facts of its type's
 * and group's policies at `now`.
 */
import { formatDuration } from './duration.js';
/** Dependencies an explanation names; the rest are counted. */
const NAMED_DEPENDENCIES = 20;
/** A waiting job: which of its dependencies have not ended (`open`, as many as the caller read). */
export function explainWaiting(job, open) {
    const rest = open.length - NAMED_DEPENDENCIES;
    const named = open
        .slice(0, NAMED_DEPENDENCIES)
        .map((d) => `${d.id} (${d.type}, ${d.state})`)
        .join(', ') + (rest > 0 ? ` and ${rest} more` : '');
    const more = job.after.length > 0 && open.length === 0 ? ' none: it is queued at once' : '';
    return {
        runnable: false,
        reasons: [
            {
                code: 'waiting-for-dependencies',
                detail: `It runs after ${job.after.length} job${job.after.length === 1 ? '' : 's'}; not ended yet:${more} ${named}.` +
                    (job.onDependencyFailure === 'run'
                        ? ' It runs once all of them have ended, however they end.'
                        : ' It is cancelled if one of them ends failed, dropped or cancelled.'),
            },
        ],
    };
}
/** `ahead`: runnable queued jobs that come before this one (a higher priority, or earlier in its group; capped by the caller). */
export function explainJob(job, policies, ahead, now) {
    if (job.state === 'running') {
        return {
            runnable: false,
            reasons: [
                { code: 'running', detail: `It is running: leased by ${job.worker ?? 'a worker'} at ${job.startedAt?.toISOString() ?? '?'}.` },
            ],
        };
    }
    if (job.state === 'waiting')
        return explainWaiting(job, []);
    if (job.state !== 'queued') {
        return {
            runnable: false,
            reasons: [{ code: 'final', detail: `It is ${job.state}; only POST /jobs/${job.id}/retry queues it again.` }],
        };
    }
    const reasons = [];
    if (job.runAt.getTime() > now.getTime()) {
        const wait = formatDuration(job.runAt.getTime() - now.getTime());
        reasons.push(job.attempts > 0
            ? { code: 'retry-backoff', detail: `Attempt ${job.attempts} failed; it is retried at ${job.runAt.toISOString()} (in ${wait}).` }
            : { code: 'scheduled', detail: `Its runAt is ${job.runAt.toISOString()} (in ${wait}).` });
    }
    for (const p of policies) {
        const who = `${p.kind} "${p.name}"${p.groupsDefault === true ? ' (under /groups-default)' : ''}`;
        if (p.paused)
            reasons.push({
                code: `${p.kind}-paused`,
                detail: `Its ${who} is paused; PATCH /${p.kind}s/${encodeURIComponent(p.name)} {"paused": false} resumes it.`,
            });
        if (p.concurrency !== null && p.freeSlots === 0) {
            reasons.push({
                code: `${p.kind}-at-concurrency`,
                detail: `Its ${who} is at its concurrency limit: ${p.running} of ${p.concurrency} running; it runs when one of them ends.`,
            });
        }
        if (p.rate !== null && p.freeTokens === 0) {
            const limit = `${p.rate.limit}/${formatDuration(p.rate.windowMs)}`;
            const next = p.nextTokenAt === null ? '' : ` The next lease may begin at ${p.nextTokenAt.toISOString()}.`;
            reasons.push({ code: `${p.kind}-rate-limited`, detail: `Its ${who} has used its rate of ${limit}.${next}` });
        }
    }
    if (reasons.length > 0)
        return { runnable: false, reasons };
    const n = ahead.capped ? `More than ${ahead.count}` : String(ahead.count);
    return {
        runnable: true,
        reasons: [
            {
                code: 'waiting-for-worker',
                detail: `It is runnable. ${n} runnable job${ahead.count === 1 && !ahead.capped ? '' : 's'} come${ahead.count === 1 && !ahead.capped ? 's' : ''} before it (of a higher priority, or earlier in its own group: groups of equal priority take turns); it is leased by the next worker asking for its type${ahead.count === 0 ? '' : ' once those are taken'}.`,
            },
        ],
    };
}
//# sourceMappingURL=explain.js.map