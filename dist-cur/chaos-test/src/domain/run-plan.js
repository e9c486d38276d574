/**
 * What the PeriodicScheduler does with one due task: pure, so every policy is a row of a table test.
 */
import { effectiveTimebox, effectiveTolerance, gapBefore, nextRunAfter, scheduleContext, } from './periodic-task.js';
import { countSlots, MAX_SLOTS_COUNTED } from './slots.js';
/** Under misfirePolicy skip, a due run later than this is missed too (Quartz's misfire threshold). */
export const MISFIRE_THRESHOLD_MS = 60_000;
/** The last `keep` slots from `first` up to `upTo`, and how many there are (at most MAX_SLOTS_COUNTED). */
function dueSlots(t, first, upTo, keep, countUpTo = MAX_SLOTS_COUNTED) {
    const last = [];
    const ctx = scheduleContext(t.timing);
    let count = 0;
    for (let s = first; s !== null && s.getTime() <= upTo.getTime() && count < countUpTo; s = t.timing.schedule.next(s, ctx)) {
        count++;
        last.push(s);
        if (last.length > keep)
            last.shift();
    }
    return { count: Math.max(count, 1), last: last.length > 0 ? last : [first] };
}
function submission(t, slot, dropCheck) {
    let runInterval = null;
    let runTolerance = null;
    if (dropCheck && t.concurrencyPolicy === 'allow') {
        runInterval = gapBefore(t.timing.schedule, slot);
        runTolerance = effectiveTolerance(t.timing, runInterval);
    }
    return { runAt: slot, scheduledAt: slot, timebox: effectiveTimebox(t.timing, slot), runInterval, runTolerance };
}
/** The slots of [from, to] as a gap, or none when the span holds no slot. */
function gapOf(t, outcome, from, to, blockedBy = null) {
    if (from === null || from.getTime() > to.getTime())
        return [];
    const slots = countSlots(t.timing.schedule, scheduleContext(t.timing), from, to);
    return slots > 0 ? [{ outcome, from, to, slots, blockedBy }] : [];
}
const before = (d) => new Date(d.getTime() - 1);
/**
 * Plans the due run(s) of a task at `now`. nextRun always advances to the first scheduled time after
 * `now` (null at or after endAt). Slots at or after endAt are not slots. Then:
 * - catchUpWindow: the due slots older than `now − catchUpWindow` are missed, whatever the policy,
 *   and the rules below apply to the others;
 * - forbid with an open job: nothing is submitted; the due slots are skipped;
 * - misfirePolicy coalesce (default): one run, for the oldest due slot, whatever number of slots
 *   passed (`coalesced` tells when there was more than one; the others are missed);
 * - skip: only a due slot that is the last one before `now` and at most MISFIRE_THRESHOLD_MS late
 *   runs; missed slots are not submitted;
 * - catch-up: each due slot runs, oldest first, at most catchUpLimit (the most recent ones). Under
 *   forbid and replace only one job of a task may be open, so one run is submitted: forbid the
 *   oldest of them, replace the newest. Catch-up runs carry no drop check (they are meant to run
 *   one after another);
 * - replace cancels the open job first; allow carries the drop check (the gap before the slot and
 *   the tolerance) on an ordinary run; every submission carries its timebox.
 * Every due slot that gets no job is in `gaps`, exactly once.
 */
export function planDueRun(t, now) {
    const misfire = t.misfirePolicy ?? 'coalesce';
    const limit = t.catchUpLimit ?? 10;
    const endAt = t.endAt ?? null;
    const ctx = scheduleContext(t.timing);
    let nextRun = nextRunAfter(t.timing, t.slot, now);
    if (nextRun !== null && endAt !== null && nextRun.getTime() >= endAt.getTime())
        nextRun = null;
    const none = { nextRun, due: 0, coalesced: false, submissions: [], replaceOpen: false, skipped: null, gaps: [] };
    // the last moment a due slot may lie at: now, or just before endAt
    const upTo = endAt !== null && endAt.getTime() <= now.getTime() ? before(endAt) : now;
    if (t.slot.getTime() > upTo.getTime())
        return none;
    const gaps = [];
    let first = t.slot;
    let missedCount = 0;
    const window = t.catchUpWindow ?? null;
    if (window !== null && t.slot.getTime() < now.getTime() - window) {
        const cutoff = new Date(now.getTime() - window);
        const old = gapOf(t, 'missed', t.slot, before(cutoff));
        gaps.push(...old);
        missedCount += old[0]?.slots ?? 0;
        first = t.timing.schedule.next(before(cutoff), ctx);
        if (first === null || first.getTime() > upTo.getTime()) {
            return { ...none, due: missedCount, skipped: missedCount > 0 ? { reason: 'missed', slots: missedCount } : null, gaps };
        }
    }
    const from = first;
    // coalesce only needs to know whether more than one slot passed
    const { count, last } = dueSlots(t, from, upTo, misfire === 'catch-up' ? limit : 1, misfire === 'coalesce' ? 2 : MAX_SLOTS_COUNTED);
    const base = { nextRun, due: count + missedCount, replaceOpen: t.concurrencyPolicy === 'replace' };
    if (t.concurrencyPolicy === 'forbid' && t.openJobId !== null) {
        gaps.push(...gapOf(t, 'skipped', from, upTo, t.openJobId));
        return {
            ...base,
            coalesced: false,
            submissions: [],
            replaceOpen: false,
            skipped: { reason: 'forbid-open-job', openJobId: t.openJobId },
            gaps,
        };
    }
    // the slots of [from, upTo] other than the contiguous run `chosen` are missed
    const missedAround = (chosen) => {
        if (chosen.length === 0)
            return gapOf(t, 'missed', from, upTo);
        const lastChosen = chosen[chosen.length - 1];
        return [...gapOf(t, 'missed', from, before(chosen[0])), ...gapOf(t, 'missed', t.timing.schedule.next(lastChosen, ctx), upTo)];
    };
    const finish = (coalesced, chosen, dropCheck) => {
        const around = missedAround(chosen);
        gaps.push(...around);
        const missed = missedCount + around.reduce((n, g) => n + g.slots, 0);
        return {
            ...base,
            coalesced,
            submissions: chosen.map((s) => submission(t, s, dropCheck)),
            skipped: missed > 0 ? { reason: 'missed', slots: missed } : null,
            gaps,
        };
    };
    switch (misfire) {
        case 'coalesce': {
            const plan = finish(count > 1, [from], true);
            // coalescing is not missing a run: only a window's slots are reported as missed here
            return { ...plan, skipped: missedCount > 0 ? { reason: 'missed', slots: missedCount } : null };
        }
        case 'skip': {
            const latest = last[last.length - 1];
            const onTime = now.getTime() - latest.getTime() <= MISFIRE_THRESHOLD_MS;
            return finish(false, onTime ? [latest] : [], true);
        }
        case 'catch-up': {
            const one = t.concurrencyPolicy !== 'allow';
            const chosen = one ? [t.concurrencyPolicy === 'forbid' ? last[0] : last[last.length - 1]] : last;
            return finish(false, chosen, count === 1 && missedCount === 0);
        }
    }
}
/** The most slots one backfill call submits. */
export const MAX_BACKFILL = 1000;
/** The slots of a schedule in [from, to), at most `max` + 1 (one more tells the range holds too many). */
export function slotsBetween(timing, from, to, max) {
    const ctx = scheduleContext(timing);
    const out = [];
    for (let s = timing.schedule.next(new Date(from.getTime() - 1), ctx); s !== null && s.getTime() < to.getTime(); s = timing.schedule.next(s, ctx)) {
        out.push(s);
        if (out.length > max)
            break;
    }
    return out;
}
/**
 * Which of the free slots (those without a job) a backfill submits, the concurrency policy applied
 * as the scheduler applies it: allow submits every slot; forbid submits the oldest, and none while
 * the task has an open job; replace submits the newest and cancels the open job. Backfilled runs
 * carry no drop check: they are meant to run one after another.
 */
export function planBackfill(t, free) {
    const make = (slot) => ({
        runAt: slot,
        scheduledAt: slot,
        timebox: effectiveTimebox(t.timing, slot),
        runInterval: null,
        runTolerance: null,
    });
    if (free.length === 0)
        return { submissions: [], replaceOpen: false, skipped: [] };
    switch (t.concurrencyPolicy) {
        case 'allow':
            return { submissions: free.map(make), replaceOpen: false, skipped: [] };
        case 'forbid':
            if (t.openJobId !== null)
                return { submissions: [], replaceOpen: false, skipped: free.map((s) => ({ scheduledAt: s, reason: 'forbid-open-job' })) };
            return {
                submissions: [make(free[0])],
                replaceOpen: false,
                skipped: free.slice(1).map((s) => ({ scheduledAt: s, reason: 'one-open-job-at-a-time' })),
            };
        case 'replace':
            return {
                submissions: [make(free[free.length - 1])],
                replaceOpen: true,
                skipped: free.slice(0, -1).map((s) => ({ scheduledAt: s, reason: 'one-open-job-at-a-time' })),
            };
    }
}
//# sourceMappingURL=run-plan.js.map