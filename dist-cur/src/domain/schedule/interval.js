import { formatDuration, MS_PER_SECOND, parseDuration } from '../duration.js';
import { DomainError } from '../errors.js';
import { scheduleError } from './fail.js';
/** Latest instant a JS Date can hold. */
const MAX_TIME = 8.64e15;
export const MIN_INTERVAL_MS = MS_PER_SECOND;
const USAGE = 'write "every <duration>" or "every <duration> offset <duration>", like "every 6m offset 1m"';
/**
 * `every <duration> [offset <duration>]`: runs at `anchor + offset + k·every` (k ≥ 1), or, when the
 * context has `firstRunAt`, at `firstRunAt + k·every` (k ≥ 0; the offset is then not used).
 * Absolute time: the time zone plays no part. next() is O(1).
 */
export class IntervalSchedule {
    kind = 'interval';
    source;
    timezone;
    everyMs;
    offsetMs;
    constructor(source, timezone, everyMs, offsetMs) {
        this.source = source;
        this.timezone = timezone;
        this.everyMs = everyMs;
        this.offsetMs = offsetMs;
        Object.freeze(this);
    }
    next(after, ctx) {
        const a = after.getTime();
        if (Number.isNaN(a))
            throw new RangeError('next(): `after` is an invalid Date');
        const every = this.everyMs;
        let base;
        let minK;
        if (ctx?.firstRunAt !== undefined) {
            base = ctx.firstRunAt.getTime();
            minK = 0;
        }
        else if (ctx?.anchor !== undefined) {
            base = ctx.anchor.getTime() + this.offsetMs;
            minK = 1;
        }
        else {
            throw new Error('interval schedules need ctx.anchor (the task creation time) or ctx.firstRunAt to compute occurrences');
        }
        if (Number.isNaN(base))
            throw new RangeError('next(): ctx.anchor / ctx.firstRunAt is an invalid Date');
        const k = Math.max(minK, Math.floor((a - base) / every) + 1);
        const t = base + k * every;
        return t > MAX_TIME ? null : new Date(t);
    }
}
function durationPart(text, what) {
    try {
        return parseDuration(text, '/schedule');
    }
    catch (e) {
        if (e instanceof DomainError)
            scheduleError(`${what}: ${e.message}`);
        throw e;
    }
}
/** Parses the tokens of an interval schedule (the first token is "every"). */
export function parseInterval(source, tokens, timezone) {
    const [, everyText, kw, offsetText, ...extra] = tokens;
    if (everyText === undefined)
        scheduleError(`"every" needs a duration; ${USAGE}`);
    const everyMs = durationPart(everyText, 'interval');
    if (everyMs < MIN_INTERVAL_MS)
        scheduleError(`interval must be at least 1s, got ${formatDuration(everyMs)}`);
    let offsetMs = 0;
    if (kw !== undefined) {
        if (kw.toLowerCase() !== 'offset') {
            scheduleError(`unexpected "${kw}" after "every ${everyText}"; ${USAGE}` +
                (/^[\d.]/.test(kw) ? ` (write combined durations without spaces, like "1h30m")` : ''));
        }
        if (offsetText === undefined)
            scheduleError(`"offset" needs a duration; ${USAGE}`);
        offsetMs = durationPart(offsetText, 'offset');
        if (extra.length > 0)
            scheduleError(`unexpected "${extra.join(' ')}" at the end; ${USAGE}`);
    }
    return new IntervalSchedule(source, timezone, everyMs, offsetMs);
}
//# sourceMappingURL=interval.js.map