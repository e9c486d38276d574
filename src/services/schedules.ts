import { occurrences, parseSchedule, type ScheduleKind } from '../domain/schedule/index.js';

export interface PreviewInput {
  schedule: string;
  timezone?: string | undefined;
  from?: Date | undefined;
  firstRunAt?: Date | undefined;
  count: number;
}

/**
 * The next `count` times of a schedule after `from` (default `now`). For an interval schedule
 * `from` is the anchor (the creation time of a task), as API.md says. A schedule that stops firing
 * (a date in the past) yields fewer times.
 */
export function previewSchedule(input: PreviewInput, now: Date): { kind: ScheduleKind; next: Date[] } {
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
