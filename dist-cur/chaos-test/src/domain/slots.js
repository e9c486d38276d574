/**
 * Counting and listing the slots of a schedule over a span of time, forwards and backwards. The
 * schedule engine only answers "the next occurrence after t"; what lies before a moment is found by
 * looking at windows ending there that double until they hold enough slots, so a page of the last n
 * slots costs about n occurrences however long the history. Pure: time comes in as arguments.
 */
import { intervalAt } from './schedule/index.js';
/** The most slots counted in one span (a 1 s interval after eleven days away). */
export const MAX_SLOTS_COUNTED = 1_000_000;
/** The slots in [from, to] (both inclusive), at most `cap`: arithmetic for intervals, else one by one. */
export function countSlots(schedule, ctx, from, to, cap = MAX_SLOTS_COUNTED) {
    if (to.getTime() < from.getTime())
        return 0;
    const first = schedule.next(new Date(from.getTime() - 1), ctx);
    if (first === null || first.getTime() > to.getTime())
        return 0;
    if (schedule.everyMs !== null) {
        return Math.min(cap, Math.floor((to.getTime() - first.getTime()) / schedule.everyMs) + 1);
    }
    let n = 0;
    for (let s = first; s !== null && s.getTime() <= to.getTime() && n < cap; s = schedule.next(s, ctx))
        n++;
    return n;
}
/**
 * The last `n` slots before `before` (exclusive) and not before `from` (inclusive), newest first.
 * Looks at a window ending at `before` about n gaps long, and doubles it until it holds n slots or
 * reaches `from`.
 */
export function slotsBefore(schedule, ctx, before, from, n) {
    if (n <= 0 || before.getTime() <= from.getTime())
        return [];
    const end = before.getTime();
    const gap = Math.max(1_000, schedule.everyMs ?? intervalAt(schedule, new Date(Math.max(from.getTime(), end - 86_400_000))));
    let width = gap * (n + 1);
    for (;;) {
        const start = Math.max(from.getTime(), end - width);
        const found = [];
        for (let s = schedule.next(new Date(start - 1), ctx); s !== null && s.getTime() < end; s = schedule.next(s, ctx)) {
            found.push(s);
            if (found.length > n)
                found.shift();
        }
        if (found.length >= n || start === from.getTime())
            return found.reverse();
        width *= 2;
    }
}
//# sourceMappingURL=slots.js.map