/**
 * Periodic tasks: the resource, its defaults and the time arithmetic the PeriodicScheduler needs.
 * Pure: time comes in as arguments, nothing here reads the clock or does I/O.
 */
import { formatDuration, MS_PER_SECOND, parseDuration } from './duration.js';
import { DomainError, InvalidInputError } from './errors.js';
import { intervalAt, parseSchedule } from './schedule/index.js';
import { healthOf } from './task-health.js';
export const CONCURRENCY_POLICIES = ['forbid', 'allow', 'replace'];
/** What the scheduler does with the runs it missed: coalesce them into one, skip them, or catch up on each. */
export const MISFIRE_POLICIES = ['coalesce', 'skip', 'catch-up'];
export const DEFAULT_CATCH_UP_LIMIT = 10;
export const MAX_CATCH_UP_LIMIT = 1000;
/** The most attempts a periodic task's run may have. */
export const MAX_TASK_ATTEMPTS = 100;
export const TASK_ID_PATTERN = /^[A-Za-z0-9._:-]{1,200}$/;
/** Marks older than this belong to an instance that died; any instance may take the task. */
export const STALE_MARK_MS = 10 * MS_PER_SECOND;
/** Upper bound of the default tolerance. */
export const MAX_DEFAULT_TOLERANCE_MS = 5 * MS_PER_SECOND;
/** How many gaps of a cron/calendar schedule the tolerance check looks at. */
const TOLERANCE_CHECK_GAPS = 16;
export function scheduleContext(t) {
    return t.firstRunAt ? { anchor: t.createdAt, firstRunAt: t.firstRunAt } : { anchor: t.createdAt };
}
/** `min(5s, interval/10)`, whole milliseconds. */
export function defaultTolerance(intervalMs) {
    return Math.min(MAX_DEFAULT_TOLERANCE_MS, Math.floor(intervalMs / 10));
}
/**
 * The time from the occurrence before `slot` to `slot`: `every` for intervals; for cron and
 * calendar schedules found by bisection over next() (the engine has no prev()). When there is no
 * earlier occurrence within ~2 years, the gap after the slot stands in.
 */
export function gapBefore(schedule, slot) {
    if (schedule.everyMs !== null)
        return schedule.everyMs;
    const s = slot.getTime();
    const after = intervalAt(schedule, slot);
    // Regular schedules: the previous occurrence is one "gap after" earlier.
    const guess = s - after;
    const g = schedule.next(new Date(guess - 1));
    if (g !== null && g.getTime() === guess) {
        const n = schedule.next(g);
        if (n !== null && n.getTime() === s)
            return after;
    }
    // Find lo with next(lo) < slot by doubling, then bisect (whole seconds) towards the boundary
    // where next() starts answering `slot`: next(lo) is then the previous occurrence.
    const limit = 800 * 86_400_000;
    let w = MS_PER_SECOND;
    let hi = s - 1;
    let lo = null;
    while (w <= limit) {
        const at = s - w;
        const c = schedule.next(new Date(at));
        if (c !== null && c.getTime() < s) {
            lo = at;
            break;
        }
        hi = at;
        w *= 2;
    }
    if (lo === null)
        return after;
    let low = lo;
    while (hi - low > MS_PER_SECOND) {
        const mid = low + Math.floor((hi - low) / 2 / MS_PER_SECOND) * MS_PER_SECOND;
        if (mid <= low)
            break;
        const c = schedule.next(new Date(mid));
        if (c !== null && c.getTime() < s)
            low = mid;
        else
            hi = mid;
    }
    const prev = schedule.next(new Date(low));
    return prev === null ? after : s - prev.getTime();
}
/** The tolerance in effect at a slot (for the drop check: measured against the gap before it). */
export function effectiveTolerance(t, gapMs) {
    return t.tolerance ?? defaultTolerance(gapMs);
}
/** The timebox in effect for the run at `slot`: the task's, or half the gap after the slot. */
export function effectiveTimebox(t, slot) {
    return t.timebox ?? Math.max(1, Math.floor(intervalAt(t.schedule, slot) / 2));
}
/** First scheduled time at or after `now`: where a new, changed or re-enabled task starts. */
export function firstRunFrom(t, now) {
    return t.schedule.next(new Date(now.getTime() - 1), scheduleContext(t));
}
/**
 * First scheduled time strictly after `now`: where nextRun goes once the due run has been
 * submitted. Every slot in between (missed while no instance ran) is coalesced into that one run.
 */
export function nextRunAfter(t, slot, now) {
    const from = slot.getTime() > now.getTime() ? slot : now;
    return t.schedule.next(from, scheduleContext(t));
}
/** The smallest gap between the next occurrences after `from` (for the tolerance check). */
export function smallestGap(schedule, from, ctx) {
    if (schedule.everyMs !== null)
        return schedule.everyMs;
    let smallest = Number.POSITIVE_INFINITY;
    let prev = schedule.next(from, ctx);
    for (let i = 0; prev !== null && i < TOLERANCE_CHECK_GAPS; i++) {
        const n = schedule.next(prev, ctx);
        if (n === null)
            break;
        smallest = Math.min(smallest, n.getTime() - prev.getTime());
        prev = n;
    }
    return Number.isFinite(smallest) ? smallest : intervalAt(schedule, from);
}
/**
 * Parses and checks the timing fields together: the schedule (400 naming the bad part at
 * `/schedule`), the time zone (`/timezone`), durations (`/tolerance`, `/timebox`), and that the
 * tolerance is below the interval. Every bad field is reported, not just the first.
 */
export function parseTiming(input, createdAt, now) {
    const failures = [];
    const attempt = (fn) => {
        try {
            return fn();
        }
        catch (err) {
            if (err instanceof DomainError) {
                failures.push(err);
                return undefined;
            }
            throw err;
        }
    };
    let schedule = attempt(() => parseSchedule(input.schedule, input.timezone));
    if (schedule === undefined && failures[0]?.errors.some((e) => e.path === '/timezone')) {
        // The zone is checked first; still tell what is wrong with the schedule itself, if anything.
        attempt(() => parseSchedule(input.schedule, 'UTC'));
        schedule = undefined;
    }
    const duration = (v, path) => (typeof v === 'number' ? v : parseDuration(v, path));
    const tolerance = input.tolerance === null ? null : attempt(() => duration(input.tolerance, '/tolerance'));
    const timebox = input.timebox === null
        ? null
        : attempt(() => {
            const ms = duration(input.timebox, '/timebox');
            if (ms <= 0)
                throw new InvalidInputError('timebox must be longer than 0', [{ path: '/timebox', message: 'timebox must be longer than 0' }]);
            return ms;
        });
    if (schedule && tolerance !== undefined && tolerance !== null) {
        const gap = smallestGap(schedule, now, scheduleContext({ createdAt, firstRunAt: input.firstRunAt }));
        if (tolerance >= gap) {
            const message = `tolerance ${formatDuration(tolerance)} must be below the interval (${formatDuration(gap)})`;
            failures.push(new InvalidInputError(message, [{ path: '/tolerance', message }]));
        }
    }
    if (failures.length === 1)
        throw failures[0];
    if (failures.length > 1) {
        const errors = failures.flatMap((f) => (f.errors.length > 0 ? f.errors : [{ path: '/', message: f.message }]));
        throw new InvalidInputError(`${errors.length} fields are invalid: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`, errors);
    }
    return { schedule: schedule, tolerance: tolerance ?? null, timebox: timebox ?? null };
}
/** True for an id a client may choose. */
export function isTaskId(id) {
    return TASK_ID_PATTERN.test(id);
}
/**
 * Parsed schedules by (source, time zone): the scheduler handles many tasks sharing few schedules,
 * and parsing a cron or calendar expression costs more than computing its next time. Schedules are
 * immutable, so sharing them is safe.
 */
export class ScheduleCache {
    capacity;
    map = new Map();
    constructor(capacity = 10_000) {
        this.capacity = capacity;
    }
    get(source, timezone) {
        const key = `${timezone}\u0000${source}`;
        let s = this.map.get(key);
        if (s === undefined) {
            s = parseSchedule(source, timezone);
            if (this.map.size >= this.capacity)
                this.map.delete(this.map.keys().next().value);
            this.map.set(key, s);
        }
        return s;
    }
}
/** Adds the effective tolerance and timebox (computed at nextRun, or `now` when there is none). */
export function viewOf(t, now, cache) {
    let schedule;
    const health = healthOf(t, now);
    try {
        schedule = cache.get(t.schedule, t.timezone);
    }
    catch {
        return { ...t, health, effectiveTolerance: t.tolerance, effectiveTimebox: t.timebox };
    }
    const at = t.nextRun ?? now;
    return {
        ...t,
        health,
        effectiveTolerance: t.tolerance ?? defaultTolerance(gapBefore(schedule, at)),
        effectiveTimebox: effectiveTimebox({ schedule, timebox: t.timebox }, at),
    };
}
/** A stored task's timing (throws when its schedule no longer parses). */
export function taskTiming(t, cache) {
    return {
        schedule: cache.get(t.schedule, t.timezone),
        createdAt: t.createdAt,
        firstRunAt: t.firstRunAt,
        tolerance: t.tolerance,
        timebox: t.timebox,
    };
}
/** The first run at or after `now`, unless it lies at or after endAt. */
export function firstRunBefore(t, now, endAt) {
    const next = firstRunFrom(t, now);
    return next !== null && endAt !== null && next.getTime() >= endAt.getTime() ? null : next;
}
//# sourceMappingURL=periodic-task.js.map