/**
 * systemd calendar events (`man systemd.time`, CALENDAR EVENTS):
 *
 *     [DayOfWeek] [[Year-]Month-Day] [Hour:Minute[:Second]]
 *
 * Each numeric component is `*`, a value, a list `a,b`, a range `a..b`, or a repetition `a/r`,
 * `a..b/r`, `*\/r`. Weekdays are names (Mon or Monday, any case), lists and ranges (`Mon..Fri`,
 * `Mon-Fri`, `Sat,Sun`). Omitted parts default to `*-*-*` (date) and `00:00:00` (time); seconds
 * default to 0. `~` instead of the last `-` counts days from the month's end: `*-02~01` is the last
 * day of February, `*-*~03` the third-last day of every month, `Mon *-05~07/1` the last Monday of May.
 * Shortcuts: minutely, hourly, daily, weekly (Monday 00:00), monthly, quarterly, semiannually,
 * yearly / annually. A weekday and a date must both match. A time zone may end the event
 * (`weekly Pacific/Auckland`, `Mon..Fri *-*-* 09:00 Europe/Berlin`, `daily utc`); it wins over the
 * task's `timezone`.
 */
import { scheduleError } from './fail.js';
import { ValueSet } from './spec.js';
export const MIN_CALENDAR_YEAR = 1970;
export const MAX_CALENDAR_YEAR = 2199;
export const CALENDAR_SHORTCUTS = {
    minutely: '*-*-* *:*:00',
    hourly: '*-*-* *:00:00',
    daily: '*-*-* 00:00:00',
    weekly: 'Mon *-*-* 00:00:00',
    monthly: '*-*-01 00:00:00',
    quarterly: '*-01,04,07,10-01 00:00:00',
    semiannually: '*-01,07-01 00:00:00',
    'semi-annually': '*-01,07-01 00:00:00',
    biannually: '*-01,07-01 00:00:00',
    'bi-annually': '*-01,07-01 00:00:00',
    yearly: '*-01-01 00:00:00',
    annually: '*-01-01 00:00:00',
};
/** Index in systemd's week (Mon = 0 … Sun = 6). */
const WEEKDAY_NAMES = {
    mon: 0,
    monday: 0,
    tue: 1,
    tuesday: 1,
    wed: 2,
    wednesday: 2,
    thu: 3,
    thursday: 3,
    fri: 4,
    friday: 4,
    sat: 5,
    saturday: 5,
    sun: 6,
    sunday: 6,
};
const SHAPE = 'expected [weekday] [date] [time], like "Mon..Fri *-*-* 09:00", "*-*-01 00:00", "2026-12-24 18:00" or "*:0/15"';
const YEAR = { name: 'year', min: MIN_CALENDAR_YEAR, max: MAX_CALENDAR_YEAR };
const MONTH = { name: 'month', min: 1, max: 12 };
const DAY = { name: 'day', min: 1, max: 31 };
const HOUR = { name: 'hour', min: 0, max: 23 };
const MINUTE = { name: 'minute', min: 0, max: 59 };
const SECOND = { name: 'second', min: 0, max: 59 };
function unknownWord(word) {
    scheduleError(`unknown word "${word}"; use a cron expression, a calendar event like "Mon..Fri 09:00", one of ` +
        `${['minutely', 'hourly', 'daily', 'weekly', 'monthly', 'quarterly', 'semiannually', 'yearly'].join(', ')}, ` +
        `or "every <duration>"`);
}
class Parser {
    src;
    constructor(src) {
        this.src = src;
    }
    fail(message) {
        scheduleError(`${message} in "${this.src}"`);
    }
    value(part, text) {
        if (part === SECOND && /^\d+\.\d*$/.test(text))
            this.fail(`fractional seconds "${text}" are not supported`);
        if (!/^\d+$/.test(text))
            this.fail(`${part.name} "${text}" is not a number`);
        const v = Number(text);
        if (v < part.min || v > part.max)
            this.fail(`${part.name} "${text}" is out of range ${part.min}-${part.max}`);
        return v;
    }
    /** Parses a component into chains (list elements). */
    component(part, text) {
        if (text === '')
            this.fail(`${part.name} is missing`);
        const chains = [];
        for (const item of text.split(',')) {
            if (item === '')
                this.fail(`${part.name} "${text}" has an empty list element`);
            const slash = item.split('/');
            if (slash.length > 2)
                this.fail(`${part.name} "${item}" has more than one "/"`);
            const [range, stepText] = slash;
            let step = 1;
            if (stepText !== undefined) {
                if (!/^\d+$/.test(stepText))
                    this.fail(`${part.name} repetition "/${stepText}" is not a number`);
                step = Number(stepText);
                if (step < 1)
                    this.fail(`${part.name} repetition "/${stepText}" must be at least 1`);
            }
            if (range === '*') {
                chains.push({ start: part.min, end: part.max, step, star: stepText === undefined, ranged: false });
                continue;
            }
            const dots = range.split('..');
            if (dots.length > 2)
                this.fail(`${part.name} range "${range}" is not valid; write it like 1..5`);
            const start = this.value(part, dots[0]);
            let end = stepText !== undefined ? part.max : start;
            if (dots.length === 2) {
                end = this.value(part, dots[1]);
                if (end < start)
                    this.fail(`${part.name} range "${range}" goes backwards`);
            }
            chains.push({ start, end, step, star: false, ranged: dots.length === 2 });
        }
        return chains;
    }
    values(part, text) {
        const out = [];
        for (const c of this.component(part, text))
            for (let v = c.start; v <= c.end; v += c.step)
                out.push(v);
        return out;
    }
    weekdays(text) {
        const out = [];
        const name = (w) => {
            const i = WEEKDAY_NAMES[w.toLowerCase()];
            if (i === undefined) {
                if (CALENDAR_SHORTCUTS[w.toLowerCase()] !== undefined) {
                    scheduleError(`"${w}" must stand alone; for a time of day write a full event like "*-*-* 10:00"`);
                }
                this.fail(`unknown weekday "${w}"; use Mon, Tue, Wed, Thu, Fri, Sat, Sun (or full names)`);
            }
            return i;
        };
        for (const item of text.split(',')) {
            if (item === '')
                this.fail(`weekday list "${text}" has an empty element`);
            const m = /^([a-z]+)(?:(?:\.\.|-)([a-z]+))?$/i.exec(item);
            if (!m)
                this.fail(`cannot read weekday "${item}"; write it like Mon, Mon..Fri or Sat,Sun`);
            const a = name(m[1]);
            const b = m[2] !== undefined ? name(m[2]) : a;
            if (b < a) {
                const tail = b === 0 ? 'Mon' : `Mon..${m[2]}`;
                const head = a === 6 ? 'Sun' : `${m[1]}..Sun`;
                this.fail(`weekday range "${item}" goes backwards (weeks run Mon..Sun); write it as a list like "${head},${tail}"`);
            }
            for (let i = a; i <= b; i++)
                out.push((i + 1) % 7); // to 0 = Sunday
        }
        return out;
    }
}
const isWeekdayToken = (t) => /^[a-z]/i.test(t);
const isDateToken = (t) => !t.includes(':') && /[-~]/.test(t);
const isTimeToken = (t) => t.includes(':');
/**
 * The time zone written at the end of a calendar event (`weekly Pacific/Auckland`,
 * `*-*-* 09:00 UTC`), as systemd's OnCalendar= accepts it: `UTC` in any case or an IANA name.
 * Returns the tokens without it and the zone (null when none is written). A last token shaped like
 * `Area/Location` that Intl does not know is refused here, naming it.
 */
export function splitCalendarZone(tokens, isZone) {
    const last = tokens[tokens.length - 1];
    if (tokens.length < 2 || !/^[a-z]/i.test(last) || /[:~]|\.\./.test(last))
        return { tokens, timezone: null };
    const lower = last.toLowerCase();
    if (WEEKDAY_NAMES[lower.split(/[.,-]/)[0] ?? ''] !== undefined || CALENDAR_SHORTCUTS[lower] !== undefined) {
        return { tokens, timezone: null };
    }
    const rest = tokens.slice(0, -1);
    if (lower === 'utc')
        return { tokens: rest, timezone: 'UTC' };
    if (isZone(last))
        return { tokens: rest, timezone: last };
    if (last.includes('/')) {
        scheduleError(`unknown time zone "${last}" at the end of "${tokens.join(' ')}"; use UTC or an IANA name like Europe/Berlin`);
    }
    return { tokens, timezone: null };
}
/** Compiles a calendar event (already split on whitespace, time zone removed) into a field spec. */
export function parseCalendar(tokens) {
    const src = tokens.join(' ');
    if (tokens.length === 1) {
        const expanded = CALENDAR_SHORTCUTS[tokens[0].toLowerCase()];
        if (expanded !== undefined)
            return parseCalendar(expanded.split(' '));
    }
    if (tokens.length === 1 && /^[a-z][a-z-]*$/i.test(tokens[0])) {
        const w = tokens[0].toLowerCase();
        if (WEEKDAY_NAMES[w] === undefined && !/^[a-z]+-[a-z]+$/.test(w))
            unknownWord(tokens[0]);
    }
    const isoLike = tokens.find((t) => /^\d{4}-\d{1,2}-\d{1,2}T/i.test(t));
    if (isoLike !== undefined) {
        scheduleError(`cannot read "${isoLike}"; separate date and time with a space, like "2026-12-24 18:00"`);
    }
    const zoneInside = tokens.find((t) => /^[A-Za-z]+\/[A-Za-z_]+/.test(t) || t.toLowerCase() === 'utc');
    if (zoneInside !== undefined) {
        scheduleError(`the time zone "${zoneInside}" must come last, like "${[...tokens.filter((x) => x !== zoneInside), zoneInside].join(' ')}"`);
    }
    const p = new Parser(src);
    let i = 0;
    let weekdays = null;
    let dateText = '*-*-*';
    let timeText = '00:00:00';
    if (tokens[i] !== undefined && isWeekdayToken(tokens[i]))
        weekdays = p.weekdays(tokens[i++]);
    if (tokens[i] !== undefined && isDateToken(tokens[i]))
        dateText = tokens[i++];
    if (tokens[i] !== undefined && isTimeToken(tokens[i]))
        timeText = tokens[i++];
    if (i < tokens.length) {
        const t = tokens[i];
        if (i > 0 && /^[a-z]/i.test(t) && WEEKDAY_NAMES[t.split(/[.,-]/)[0]?.toLowerCase() ?? ''] !== undefined) {
            scheduleError(`the weekday "${t}" must come first, like "${[t, ...tokens.filter((x) => x !== t)].join(' ')}"`);
        }
        if (i === 0 && tokens.length === 1)
            scheduleError(`cannot read "${t}"; ${SHAPE}`);
        scheduleError(`cannot read "${t}" in "${src}"; ${SHAPE}`);
    }
    // Date: [Year-]Month-Day or [Year-]Month~Day.
    let years = null;
    let monthText;
    let dayText;
    let fromEnd = false;
    const tilde = dateText.indexOf('~');
    let ymParts;
    if (tilde >= 0) {
        fromEnd = true;
        dayText = dateText.slice(tilde + 1);
        ymParts = dateText.slice(0, tilde).split('-');
        if (ymParts.length > 2 || dayText.includes('~'))
            scheduleError(`cannot read date "${dateText}" in "${src}"; write it like *-02~01`);
    }
    else {
        const parts = dateText.split('-');
        if (parts.length !== 2 && parts.length !== 3) {
            scheduleError(`cannot read date "${dateText}" in "${src}"; write it like 2026-12-24, *-*-01 or 12-24`);
        }
        dayText = parts.pop();
        ymParts = parts;
    }
    if (ymParts.length === 2) {
        const yearText = ymParts[0];
        if (yearText !== '*') {
            years = p.component(YEAR, yearText).map((c) => ({ start: c.start, end: c.end, step: c.step }));
        }
        monthText = ymParts[1];
    }
    else {
        monthText = ymParts[0];
    }
    const months = p.values(MONTH, monthText);
    let days = [];
    const lastDays = [];
    if (fromEnd) {
        for (const c of p.component(DAY, dayText)) {
            if (c.star)
                days = p.values(DAY, '*');
            else if (c.ranged)
                lastDays.push({ far: c.end, near: c.start, step: c.step }); // ~A..B[/R]
            else if (c.end !== c.start)
                lastDays.push({ far: c.start, near: 1, step: c.step }); // ~N/R: N-th last day, then every R days to the end
            else
                lastDays.push({ far: c.start, near: c.start, step: 1 }); // ~N
        }
    }
    else {
        days = p.values(DAY, dayText);
    }
    // Time: Hour:Minute[:Second].
    const timeParts = timeText.split(':');
    if (timeParts.length !== 2 && timeParts.length !== 3) {
        scheduleError(`cannot read time "${timeText}" in "${src}"; write it like 09:00, 09:00:30 or *:0/15`);
    }
    const hours = p.values(HOUR, timeParts[0]);
    const minutes = p.values(MINUTE, timeParts[1]);
    const seconds = p.values(SECOND, timeParts[2] ?? '00');
    return {
        years,
        months: new ValueSet(1, 12, months),
        days: new ValueSet(1, 31, days),
        lastDays,
        nearestWeekdays: [],
        weekdays: weekdays === null ? ValueSet.all(0, 6) : new ValueSet(0, 6, weekdays),
        nthWeekdays: [],
        dayMode: 'and',
        hours: new ValueSet(0, 23, hours),
        minutes: new ValueSet(0, 59, minutes),
        seconds: new ValueSet(0, 59, seconds),
        dayMasks: new Map(),
    };
}
//# sourceMappingURL=calendar.js.map