export type ScheduleKind = 'interval' | 'cron' | 'calendar';

/**
 * What an interval schedule is counted from. `anchor` is the task's creation time; `firstRunAt`, when
 * given, replaces anchor and offset (runs at `firstRunAt + k·every`, k ≥ 0). Cron and calendar
 * schedules ignore `anchor`; they treat `firstRunAt` as a lower bound (no occurrence before it).
 */
export interface ScheduleContext {
  anchor?: Date;
  firstRunAt?: Date;
}

export interface Schedule {
  readonly kind: ScheduleKind;
  /** As the user wrote it. */
  readonly source: string;
  /** IANA time zone the schedule is evaluated in (irrelevant for intervals, still validated). */
  readonly timezone: string;
  /** Interval schedules only, else null. */
  readonly everyMs: number | null;
  /** Interval schedules only (0 when no offset was written), else null. */
  readonly offsetMs: number | null;
  /** First occurrence strictly after `after`, or null if none (within a sane horizon). */
  next(after: Date, ctx?: ScheduleContext): Date | null;
}
