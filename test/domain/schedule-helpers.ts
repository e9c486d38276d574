import { occurrences, parseSchedule } from '../../src/domain/schedule/index.js';
import type { ScheduleContext } from '../../src/domain/schedule/index.js';
import { DomainError } from '../../src/domain/errors.js';

/** The next `count` occurrences after `from`, as ISO strings. */
export function nextTimes(source: string, from: string, count: number, timezone = 'UTC', ctx: ScheduleContext = {}): string[] {
  const s = parseSchedule(source, timezone);
  return occurrences(s, { after: new Date(from), count, ...ctx }).map((d) => d.toISOString());
}

export function scheduleErrorOf(source: string, timezone = 'UTC'): DomainError {
  try {
    parseSchedule(source, timezone);
  } catch (e) {
    if (e instanceof DomainError) return e;
    throw e;
  }
  throw new Error(`expected parseSchedule(${JSON.stringify(source)}) to fail`);
}
