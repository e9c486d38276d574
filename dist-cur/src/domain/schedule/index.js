/**
 * The schedule engine: pure and I/O-free (time in, times out; it never reads the clock).
 *
 *  - interval: `every <duration> [offset <duration>]`
 *  - cron: 5 or 6 fields, names, ranges, steps, lists, @-shortcuts
 *  - calendar: systemd calendar events (`Mon..Fri *-*-* 09:00`, `*:0/15`, `daily`, …)
 *
 * Cron and calendar schedules are evaluated in an IANA time zone (the task's, or the one ending a
 * calendar event), DST-correct: wall times that do not exist are skipped, wall times that occur twice
 * fire once (the first time).
 */
import { parseDuration } from '../duration.js';
import { DomainError } from '../errors.js';
import { CALENDAR_SHORTCUTS, parseCalendar, splitCalendarZone } from './calendar.js';
import { parseCron } from './cron.js';
import { scheduleError } from './fail.js';
import { FieldSchedule, nextInstant } from './field-schedule.js';
import { parseInterval } from './interval.js';
import { fieldsToWall, nextWallMatch } from './spec.js';
import { getZone } from './timezone.js';
export { HORIZON_YEARS, SEARCH_UNTIL_YEAR } from './field-schedule.js';
export { MIN_INTERVAL_MS } from './interval.js';
const MAX_SOURCE_LENGTH = 1000;
const DAY = 86_400_000;
/** What intervalAt() answers for a cron/calendar schedule with no occurrence after `at`. */
export const FALLBACK_INTERVAL_MS = DAY;
export function isValidTimezone(tz) {
    return typeof tz === 'string' && getZone(tz) !== null;
}
function zoneOrThrow(timezone) {
    const zone = typeof timezone === 'string' ? getZone(timezone) : null;
    if (zone === null) {
        const message = `unknown time zone ${JSON.stringify(timezone)}; use an IANA name like Europe/Berlin`;
        throw new DomainError('invalid_input', message, [{ path: '/timezone', message }]);
    }
    return zone;
}
/**
 * Rejects specs that can never fire. Structural: searches wall times (no zone) from a fixed reference
 * over a full 400-year Gregorian cycle (or the written years); then confirms the first match really
 * occurs in the zone (it could fall in a DST gap every time).
 */
function assertFires(spec, zone, source) {
    let fromYear = 2000;
    let toYear = 2400;
    if (spec.years !== null) {
        fromYear = Math.min(...spec.years.map((r) => r.start));
        toYear = Math.max(...spec.years.map((r) => r.end));
    }
    const first = nextWallMatch(spec, { y: fromYear, mo: 1, d: 1, h: 0, mi: 0, s: 0 }, toYear);
    if (first === null)
        scheduleError(`schedule "${source}" never fires`);
    if (nextInstant(spec, zone, fieldsToWall(first) - 2 * DAY) === null) {
        scheduleError(`schedule "${source}" never fires: its local times do not exist in ${zone.name} (daylight-saving gap)`);
    }
}
/**
 * Parses a schedule in any of the three grammars (detected by shape). Throws DomainError
 * `invalid_schedule` (path `/schedule`) naming the offending part, or `invalid_input` (path
 * `/timezone`) for an unknown time zone.
 */
export function parseSchedule(source, timezone = 'UTC') {
    const zone = zoneOrThrow(timezone);
    if (typeof source !== 'string')
        scheduleError('schedule must be a string');
    const text = source.trim();
    if (text === '') {
        scheduleError('schedule is empty; write "every 5m", a cron expression like "*/5 * * * *" or a calendar event like "daily"');
    }
    if (text.length > MAX_SOURCE_LENGTH)
        scheduleError(`schedule is too long (at most ${MAX_SOURCE_LENGTH} characters)`);
    const tokens = text.split(/\s+/);
    const first = tokens[0].toLowerCase();
    if (first === 'every')
        return parseInterval(source, tokens, timezone);
    let kind;
    if (first.startsWith('@'))
        kind = 'cron';
    else if (tokens.length === 1 && CALENDAR_SHORTCUTS[first] !== undefined)
        kind = 'calendar';
    else if (tokens.some((t) => /[:~]|\.\./.test(t)))
        kind = 'calendar';
    else if (tokens.length >= 4)
        kind = 'cron';
    else if (tokens.some((t) => /^[a-z]/i.test(t) || t.includes('-')))
        kind = 'calendar';
    else {
        if (tokens.length === 1 && looksLikeDuration(text)) {
            scheduleError(`"${text}" is a duration; for an interval write "every ${text}"`);
        }
        scheduleError(`expected 5 or 6 cron fields, got ${tokens.length}`);
    }
    if (kind === 'cron') {
        const spec = parseCron(tokens);
        assertFires(spec, zone, text);
        return new FieldSchedule(kind, source, timezone, spec, zone);
    }
    // A zone written at the end of a calendar event wins over the task's timezone (systemd OnCalendar=).
    const split = splitCalendarZone(tokens, isValidTimezone);
    const calendarZone = split.timezone === null ? zone : getZone(split.timezone);
    const spec = parseCalendar(split.tokens);
    assertFires(spec, calendarZone, text);
    return new FieldSchedule(kind, source, split.timezone ?? timezone, spec, calendarZone);
}
function looksLikeDuration(text) {
    try {
        parseDuration(text);
        return true;
    }
    catch {
        return false;
    }
}
/** The next `count` occurrences after `opts.after` (fewer if the schedule ends). */
export function occurrences(s, opts) {
    const { after, count, ...ctx } = opts;
    if (!Number.isInteger(count) || count < 0)
        throw new RangeError(`occurrences(): count must be a non-negative integer, got ${count}`);
    const out = [];
    let t = after;
    while (out.length < count) {
        t = s.next(t, ctx);
        if (t === null)
            break;
        out.push(t);
    }
    return out;
}
/**
 * Nominal gap used for defaults and the drop check: everyMs for intervals; for cron/calendar the time
 * from `at` to the next occurrence after `at` (FALLBACK_INTERVAL_MS, one day, when there is none, so
 * derived defaults stay finite).
 */
export function intervalAt(s, at, ctx) {
    if (s.everyMs !== null)
        return s.everyMs;
    void ctx; // the nominal gap of a cron/calendar schedule does not depend on anchor or firstRunAt
    const n = s.next(at);
    return n === null ? FALLBACK_INTERVAL_MS : n.getTime() - at.getTime();
}
//# sourceMappingURL=index.js.map