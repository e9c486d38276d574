import { occurrences, parseSchedule } from '../domain/schedule/index.js';
/**
 * The next `count` times of a schedule after `from` (default `now`). For an interval schedule
 * `from` is the anchor (the creation time of a task), as API.md says. A schedule that stops firing
 * (a date in the past) yields fewer times.
 */
export function previewSchedule(input, now) {
    const schedule = parseSchedule(input.schedule, input.timezone ?? 'UTC');
    const from = input.from ?? now;
    const next = occurrences(schedule, {
        after: from,
        count: input.count,
        anchor: from,
        ...(input.firstRunAt ? { firstRunAt: input.firstRunAt } : {}),
    });
    return { kind: schedule.kind, next };
}
//# sourceMappingURL=schedules.js.map