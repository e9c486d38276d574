import { fieldsToWall, nextWallMatch, wallToFields } from './spec.js';
/**
 * next() searches up to the end of this year before giving up (returning null), as systemd does
 * (its calendar years end there too), so a schedule accepted today previews however far off it is.
 */
export const SEARCH_UNTIL_YEAR = 2199;
/**
 * …and, from later years, at least this many years ahead: a whole Gregorian cycle, after which every
 * pattern without a year repeats, so whatever fires at all fires within it.
 */
export const HORIZON_YEARS = 400;
/** Supported wall-clock years. */
const MIN_TIME = Date.UTC(1000, 0, 1);
const MAX_YEAR = 9999;
const MAX_TIME = Date.UTC(MAX_YEAR, 0, 1);
/**
 * First instant strictly after `after` (ms) whose wall time in `zone` matches `spec`.
 * Wall times that do not exist (spring-forward gap) are skipped; wall times that occur twice
 * (fall-back overlap) fire once, at their first occurrence.
 */
export function nextInstant(spec, zone, after, horizonYears = HORIZON_YEARS) {
    // The horizon only bounds searches that find nothing; a match ends the search at once.
    if (Number.isNaN(after))
        throw new RangeError('next(): `after` is an invalid Date');
    if (after >= MAX_TIME)
        return null;
    const a = Math.max(after, MIN_TIME - 1);
    const start = Math.floor(a / 1000) * 1000 + 1000;
    let fields = wallToFields(start + zone.offsetAt(start));
    const maxYear = Math.min(Math.max(SEARCH_UNTIL_YEAR, fields.y + horizonYears), MAX_YEAR);
    for (;;) {
        const m = nextWallMatch(spec, fields, maxYear);
        if (m === null)
            return null;
        const wall = fieldsToWall(m);
        const r = zone.resolve(wall);
        const first = r.instants[0];
        if (first !== undefined && first > a)
            return first;
        // In a gap, or a repeated wall time whose first occurrence is not after `after`: move on.
        fields = wallToFields(r.resumeWall);
    }
}
/** Cron and calendar schedules: a field spec evaluated in a time zone. */
export class FieldSchedule {
    kind;
    source;
    timezone;
    everyMs = null;
    offsetMs = null;
    #spec;
    #zone;
    constructor(kind, source, timezone, spec, zone) {
        this.kind = kind;
        this.source = source;
        this.timezone = timezone;
        this.#spec = spec;
        this.#zone = zone;
        Object.freeze(this);
    }
    /** `ctx.firstRunAt`, if given, is a lower bound: no occurrence before it. `ctx.anchor` is ignored. */
    next(after, ctx) {
        let a = after.getTime();
        const floor = ctx?.firstRunAt?.getTime();
        if (floor !== undefined && !Number.isNaN(floor) && floor - 1 > a)
            a = floor - 1;
        const t = nextInstant(this.#spec, this.#zone, a);
        return t === null ? null : new Date(t);
    }
}
//# sourceMappingURL=field-schedule.js.map