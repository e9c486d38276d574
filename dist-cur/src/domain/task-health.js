export const HEALTH_STATUSES = ['ok', 'failing', 'overdue', 'disabled'];
/** The first of disabled, overdue, failing that holds, else ok. */
export function healthOf(f, now) {
    const status = !f.enabled
        ? 'disabled'
        : f.overdueAt !== null && f.overdueAt.getTime() <= now.getTime()
            ? 'overdue'
            : f.consecutiveFailures > 0
                ? 'failing'
                : 'ok';
    return { status, lastSuccessAt: f.lastSuccessAt, lastFailureAt: f.lastFailureAt, consecutiveFailures: f.consecutiveFailures };
}
/**
 * When a task turns overdue: `alertAfter` past the first slot due after its last finished run, or
 * after its creation when none ever finished. Null without alertAfter, or when no such slot comes
 * (the schedule ends, or endAt is reached first).
 */
export function overdueAtOf(t) {
    if (t.alertAfter === null)
        return null;
    const ctx = t.firstRunAt ? { anchor: t.createdAt, firstRunAt: t.firstRunAt } : { anchor: t.createdAt };
    // a slot at the very moment of creation counts (firstRunAt may be it); after a success, the next one
    const slot = t.schedule.next(t.lastSuccessAt ?? new Date(t.createdAt.getTime() - 1), ctx);
    if (slot === null || (t.endAt !== null && slot.getTime() >= t.endAt.getTime()))
        return null;
    return new Date(slot.getTime() + t.alertAfter);
}
//# sourceMappingURL=task-health.js.map