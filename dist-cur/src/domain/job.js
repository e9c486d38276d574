/**
 * One-shot jobs: states, who moves a job out of each, retry backoff, deadlines and the errors
 * jobclock records on a job itself. Pure: time and randomness come in as arguments.
 *
 * Job states, documented by who moves a job out of each (JOB_TRANSITIONS lists every move, and a
 * test records the moves the real statements make and checks them against it):
 * - waiting:   a job created with `after` whose dependencies have not all ended; the end of its
 *              last one queues it (-> queued), one that ends failed, dropped or cancelled cancels
 *              it unless it has onDependencyFailure "run" (-> cancelled, reason
 *              dependency-failed); cancel (-> cancelled). Never a candidate of a lease.
 * - queued:    POST /jobs/next leases it (-> running), or the lease-time drop check drops it
 *              (-> dropped; also a job past its startBy, which the LeaseReaper drops too when
 *              no lease met it); PATCH changes its priority/runAt; cancel, or a new run of its
 *              periodic task under policy replace (-> cancelled)
 * - running:   its worker reports finished (-> finished) or failed (-> queued with attempts left,
 *              else failed); the LeaseReaper requeues or fails it when the lease expires, and fails
 *              it when its deadline and grace have passed; a lease whose worker disconnected before
 *              receiving it, or that its worker releases (at once or snoozed), is given back
 *              (-> queued, the attempt not counted); cancel, or policy
 *              replace (-> cancelled: the worker learns it at its next heartbeat)
 * - finished, failed, dropped, cancelled: final; only POST /jobs/{id}/retry moves a failed,
 *              dropped or cancelled job out again (-> queued); retention deletes final jobs older
 *              than JOBCLOCK_RETENTION
 */
import { formatDuration, MS_PER_HOUR, MS_PER_SECOND } from './duration.js';
export const JOB_STATES = ['waiting', 'queued', 'running', 'finished', 'failed', 'dropped', 'cancelled'];
/** Every state change a job can make, with its causes. Nothing else moves a job. */
export const JOB_TRANSITIONS = [
    { from: 'waiting', to: 'queued', by: ['dependencies-ended'] },
    { from: 'waiting', to: 'cancelled', by: ['cancel', 'dependency-failed'] },
    { from: 'queued', to: 'running', by: ['lease'] },
    { from: 'queued', to: 'dropped', by: ['drop-check'] },
    { from: 'queued', to: 'cancelled', by: ['cancel', 'replace-policy'] },
    { from: 'running', to: 'finished', by: ['report-finished'] },
    { from: 'running', to: 'queued', by: ['report-failed-retry', 'lease-expired-retry', 'give-back'] },
    { from: 'running', to: 'failed', by: ['report-failed', 'lease-expired', 'timebox'] },
    { from: 'running', to: 'cancelled', by: ['cancel', 'replace-policy'] },
    { from: 'failed', to: 'queued', by: ['retry'] },
    { from: 'dropped', to: 'queued', by: ['retry'] },
    { from: 'cancelled', to: 'queued', by: ['retry'] },
];
/** finished, failed, dropped, cancelled: nothing moves the job on but a retry. */
export const isFinal = (state) => state !== 'queued' && state !== 'running' && state !== 'waiting';
/** Whether a job may move from `from` to `to`. */
export function canTransition(from, to) {
    return JOB_TRANSITIONS.some((t) => t.from === from && t.to === to);
}
export const DEFAULT_MAX_ATTEMPTS = 3;
export const DEFAULT_LEASE_MS = 30 * MS_PER_SECOND;
export const MIN_LEASE_MS = MS_PER_SECOND;
export const MAX_LEASE_MS = 24 * MS_PER_HOUR;
export const MAX_WAIT_MS = 60 * MS_PER_SECOND;
export const MAX_LEASE_LIMIT = 100;
export const MAX_BATCH = 1000;
/** Most jobs one job may run after (a fan-in of 10,000 page renders is one job's `after`). */
export const MAX_AFTER = 10_000;
/** How far back a uniqueKey may match final jobs (uniqueFor). */
export const MAX_UNIQUE_FOR_MS = 30 * 24 * MS_PER_HOUR;
// ---------------------------------------------------------------------------------------------
// Retry backoff
export const BACKOFF_BASE_MS = MS_PER_SECOND;
export const BACKOFF_MAX_MS = MS_PER_HOUR;
/** Jitter spreads retries of jobs that failed together: ±20 %. */
export const BACKOFF_JITTER = 0.2;
/** 2^31 s is far beyond the cap; keeps the power finite and exact. */
const BACKOFF_MAX_EXPONENT = 31;
/** The jitter factor, in [1 − 20 %, 1 + 20 %), drawn from `random`. */
export function backoffJitter(random) {
    return 1 + BACKOFF_JITTER * (2 * random() - 1);
}
/**
 * The delay before the next attempt of a job that failed on attempt number `attempts` (1 for its
 * first attempt): `min(2^attempts s, 1 h) × jitter`. The same formula is evaluated in SQL by
 * jobReport (repositories/jobs.ts), with the jitter factor drawn here.
 */
export function retryDelayMs(attempts, jitter) {
    const exponent = Math.min(Math.max(attempts, 0), BACKOFF_MAX_EXPONENT);
    return Math.round(Math.min(BACKOFF_BASE_MS * 2 ** exponent, BACKOFF_MAX_MS) * jitter);
}
/** Exponential backoff with jitter for a job that failed on attempt `attempts`. */
export function backoffMs(attempts, random) {
    return retryDelayMs(attempts, backoffJitter(random));
}
// ---------------------------------------------------------------------------------------------
// Deadlines
export const MIN_GRACE_MS = MS_PER_SECOND;
/**
 * After its deadline a job still has this long to report (a worker told to stop saves its state):
 * 10 % of the timebox, at least 1 s. Mirrored in SQL (graceSql in repositories/jobs.ts).
 */
export function timeboxGraceMs(timeboxMs) {
    return Math.max(Math.floor(timeboxMs / 10), MIN_GRACE_MS);
}
/** `startedAt + timebox`, or null without a timebox. */
export function deadlineOf(startedAt, timeboxMs) {
    return timeboxMs === null ? null : new Date(startedAt.getTime() + timeboxMs);
}
/** A heartbeat answers `cancel: true` once the job was cancelled or its deadline passed. */
export function shouldCancel(job, now) {
    return job.state === 'cancelled' || (job.deadline !== null && now.getTime() >= job.deadline.getTime());
}
// ---------------------------------------------------------------------------------------------
// The lease-time drop check (periodic tasks with concurrency policy `allow`)
/**
 * A job of a task with policy `allow` must not begin earlier than `lastRun + interval − tolerance`;
 * returns that earliest start, or null when nothing holds it back.
 */
export function earliestStart(lastRun, intervalMs, toleranceMs) {
    if (lastRun === null)
        return null;
    return new Date(lastRun.getTime() + intervalMs - toleranceMs);
}
export function shouldDrop(now, lastRun, intervalMs, toleranceMs) {
    const earliest = earliestStart(lastRun, intervalMs, toleranceMs);
    return earliest !== null && now.getTime() < earliest.getTime();
}
export function leaseExpiredError(worker, expiredAt, now) {
    return {
        kind: 'lease_expired',
        message: `the lease of worker ${worker ?? '(unknown)'} expired${expiredAt ? ` at ${expiredAt.toISOString()}` : ''} without a report`,
        worker,
        at: now.toISOString(),
    };
}
export function timeboxError(timeboxMs, deadline, now) {
    return {
        kind: 'timebox',
        message: `exceeded its timebox of ${formatDuration(timeboxMs)} (deadline ${deadline.toISOString()}) and did not report ` +
            `within the grace of ${formatDuration(timeboxGraceMs(timeboxMs))}`,
        deadline: deadline.toISOString(),
        at: now.toISOString(),
    };
}
/**
 * What the LeaseReaper does with a running job at `now`:
 * - past its deadline and the grace (10 % of the timebox, at least 1 s) without a report: failed
 *   with a timebox error, never retried;
 * - its lease expired: queued again at once when attempts remain, else failed — unless its
 *   deadline has passed too, in which case the grace still applies and the timebox rule decides;
 * - otherwise nothing.
 */
export function reapDecision(job, now) {
    const t = now.getTime();
    if (job.deadline !== null && job.timebox !== null) {
        if (t > job.deadline.getTime() + timeboxGraceMs(job.timebox)) {
            return { action: 'fail', error: timeboxError(job.timebox, job.deadline, now) };
        }
        if (t >= job.deadline.getTime())
            return null; // inside the grace: the worker may still report
    }
    if (job.leaseExpiresAt !== null && t > job.leaseExpiresAt.getTime()) {
        const error = leaseExpiredError(job.worker, job.leaseExpiresAt, now);
        return job.attempts < job.maxAttempts ? { action: 'requeue', runAt: now, error } : { action: 'fail', error };
    }
    return null;
}
//# sourceMappingURL=job.js.map