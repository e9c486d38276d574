/**
 * Cron expressions: 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first).
 * Numbers, `*`, `?` (day fields), ranges `a-b`, steps `*\/n`, `a/n`, `a-b/n` (at most the field's
 * size), lists, month names JAN–DEC and weekday names SUN–SAT (any case), weekday 7 = Sunday, the
 * @-shortcuts, and the Quartz day extensions `L`, `L-n`, `nW`, `LW` (day of month), `nL`, `n#k`
 * (day of week).
 * When both day-of-month and day-of-week are restricted (neither starts with `*` or `?`) a day matches
 * if either matches (Vixie cron); otherwise both must match.
 */
import { scheduleError } from './fail.js';
import { ValueSet } from './spec.js';
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const SECOND = { name: 'second', min: 0, max: 59 };
const MINUTE = { name: 'minute', min: 0, max: 59 };
const HOUR = { name: 'hour', min: 0, max: 23 };
const DOM = { name: 'day-of-month', min: 1, max: 31 };
const MONTH = { name: 'month', min: 1, max: 12, names: MONTHS };
const DOW = { name: 'day-of-week', min: 0, max: 7, names: WEEKDAYS };
export const CRON_SHORTCUTS = {
    '@yearly': '0 0 1 1 *',
    '@annually': '0 0 1 1 *',
    '@monthly': '0 0 1 * *',
    '@weekly': '0 0 * * 0',
    '@daily': '0 0 * * *',
    '@midnight': '0 0 * * *',
    '@hourly': '0 * * * *',
};
function fieldError(def, field, part, problem) {
    scheduleError(part === field ? `${def.name} field "${field}" ${problem}` : `${def.name} field "${field}": "${part}" ${problem}`);
}
function readValue(def, field, text) {
    if (/^\d+$/.test(text)) {
        const v = Number(text);
        if (v < def.min || v > def.max)
            fieldError(def, field, text, `is out of range ${def.min}-${def.max}`);
        return v;
    }
    if (def.names && /^[a-z]+$/i.test(text)) {
        const i = def.names.indexOf(text.toUpperCase());
        if (i >= 0)
            return def === MONTH ? i + 1 : i;
        const kind = def === MONTH ? 'month name' : 'weekday name';
        const list = def === MONTH ? 'JAN-DEC' : 'SUN-SAT';
        scheduleError(`${def.name} field "${field}": unknown ${kind} "${text}"; use ${def.min}-${def.max} or ${list}`);
    }
    if (/[LW#]/i.test(text)) {
        const where = def === DOM ? 'L, L-n, nW and LW' : def === DOW ? 'nL and n#k' : 'L, W and #';
        const allowed = def === DOM || def === DOW ? `here ${where} are allowed` : 'they belong in the day-of-month and day-of-week fields';
        scheduleError(`${def.name} field "${field}": cannot read "${text}"; ${allowed}, each as a list element of its own`);
    }
    fieldError(def, field, text, `is not a number${def.names ? ' or name' : ''}`);
}
/** How many values a field has; a step may not be larger (cronie and croner refuse `*\/61`). */
const fieldSize = (def) => (def === DOW ? 7 : def.max - def.min + 1);
/**
 * The Quartz extensions, as croner and cron-parser read them (weekdays 0-7 as in crontab(5)):
 * day-of-month `L` (last day), `L-n` (n days before the last), `nW` (the weekday nearest the n-th),
 * `LW` (the last weekday); day-of-week `nL` / `n#L` (the last such weekday of the month) and `n#k`
 * (the k-th, 1-5). Returns false when the item is none of these.
 */
function parseDayExtension(def, field, item, out) {
    if (def === DOM) {
        const up = item.toUpperCase();
        if (up === 'L') {
            out.lastDays.push({ far: 1, near: 1, step: 1 });
            return true;
        }
        if (up === 'LW') {
            out.nearestWeekdays.push(0);
            return true;
        }
        let m = /^L-(\d+)$/.exec(up);
        if (m) {
            const n = Number(m[1]);
            if (n > 30)
                fieldError(def, field, item, 'counts back more than 30 days from the last day of the month');
            out.lastDays.push({ far: n + 1, near: n + 1, step: 1 });
            return true;
        }
        m = /^(\d+)W$/.exec(up);
        if (m) {
            out.nearestWeekdays.push(readValue(def, field, m[1]));
            return true;
        }
        if (/W/.test(up))
            fieldError(def, field, item, 'is not valid; W follows a single day, like 15W, or L (LW)');
        if (/L/.test(up))
            fieldError(def, field, item, 'is not valid; write L (last day), L-2 (two days before it) or LW');
        return false;
    }
    if (def === DOW) {
        const m = /^([a-z]+|\d+)(?:#(\d+|L)|(L))$/i.exec(item);
        if (m) {
            const wd = readValue(def, field, m[1]) % 7;
            const which = (m[2] ?? m[3] ?? '').toUpperCase();
            if (which === 'L') {
                out.nthWeekdays.push({ weekday: wd, nth: -1 });
                return true;
            }
            const nth = Number(which);
            if (nth < 1 || nth > 5)
                fieldError(def, field, item, `asks for weekday number ${nth} of the month; use #1 to #5, or L for the last`);
            out.nthWeekdays.push({ weekday: wd, nth });
            return true;
        }
        if (/^L$/i.test(item))
            fieldError(def, field, item, 'is not valid alone; write 5L for the last Friday of the month');
        if (/#/.test(item))
            fieldError(def, field, item, 'is not valid; write it like MON#2 or 1#2 (the second Monday of the month)');
    }
    return false;
}
/** Parses one field into the values and day rules it allows. */
function parseField(def, field) {
    const out = {
        values: [],
        star: field.startsWith('*') || field.startsWith('?'),
        lastDays: [],
        nearestWeekdays: [],
        nthWeekdays: [],
    };
    const { values } = out;
    for (const item of field.split(',')) {
        if (item === '')
            fieldError(def, field, item, 'has an empty list element');
        if (!item.includes('/') && parseDayExtension(def, field, item, out))
            continue;
        const slash = item.split('/');
        if (slash.length > 2)
            fieldError(def, field, item, 'has more than one "/"');
        const [rangeText, stepText] = slash;
        let step = 1;
        if (stepText !== undefined) {
            if (!/^\d+$/.test(stepText))
                fieldError(def, field, item, `has a step "${stepText}" that is not a number`);
            step = Number(stepText);
            if (step < 1)
                fieldError(def, field, item, 'has a step of 0; steps must be at least 1');
            const size = fieldSize(def);
            if (step > size) {
                fieldError(def, field, item, `has a step of ${step}, larger than the field (${size} values); steps go up to ${size}`);
            }
        }
        let lo;
        let hi;
        if (rangeText === '*' || rangeText === '?') {
            if (rangeText === '?' && def !== DOM && def !== DOW) {
                fieldError(def, field, item, 'uses "?", which is only allowed in the day-of-month and day-of-week fields');
            }
            lo = def.min;
            hi = def === DOW ? 6 : def.max;
        }
        else {
            const dash = rangeText.split('-');
            if (dash.length > 2)
                fieldError(def, field, item, 'is not a valid range; write it like 1-5');
            lo = readValue(def, field, dash[0]);
            if (dash.length === 2) {
                hi = readValue(def, field, dash[1]);
                // "SAT-SUN" / "5-0": Sunday at the end of a weekday range means 7.
                if (def === DOW && hi === 0 && lo > 0)
                    hi = 7;
                if (hi < lo)
                    fieldError(def, field, item, `is a range that goes backwards (${lo} > ${hi})`);
            }
            else {
                // `a/n` runs to the field's end: for weekdays that is 7 (crontab(5): 0-7), so 1/2 includes Sunday.
                hi = stepText !== undefined ? def.max : lo;
            }
        }
        for (let v = lo; v <= hi; v += step)
            values.push(def === DOW && v === 7 ? 0 : v);
    }
    return out;
}
/** Compiles a cron expression (already split on whitespace) into a field spec. */
export function parseCron(tokens) {
    if (tokens.length === 1 && tokens[0]?.startsWith('@')) {
        const expanded = CRON_SHORTCUTS[tokens[0].toLowerCase()];
        if (expanded === undefined) {
            scheduleError(`unknown word "${tokens[0]}"; cron shortcuts are ${Object.keys(CRON_SHORTCUTS).join(', ')}`);
        }
        return parseCron(expanded.split(' '));
    }
    const last = tokens[tokens.length - 1];
    if (/^[A-Za-z]+\/[A-Za-z_]/.test(last) || last.toLowerCase() === 'utc') {
        scheduleError(`cron expressions take no time zone ("${last}"); set the timezone field, or write a calendar event ending in one, like "Mon..Fri *-*-* 09:00 ${last}"`);
    }
    if (tokens.length !== 5 && tokens.length !== 6) {
        scheduleError(`expected 5 or 6 cron fields, got ${tokens.length}`);
    }
    const f = tokens.length === 6 ? tokens : ['0', ...tokens];
    const [sec, min, hour, dom, month, dow] = f;
    const seconds = parseField(SECOND, sec);
    const minutes = parseField(MINUTE, min);
    const hours = parseField(HOUR, hour);
    const days = parseField(DOM, dom);
    const months = parseField(MONTH, month);
    const weekdays = parseField(DOW, dow);
    return {
        years: null,
        seconds: new ValueSet(0, 59, seconds.values),
        dayMasks: new Map(),
        minutes: new ValueSet(0, 59, minutes.values),
        hours: new ValueSet(0, 23, hours.values),
        days: new ValueSet(1, 31, days.values),
        lastDays: days.lastDays,
        nearestWeekdays: days.nearestWeekdays,
        nthWeekdays: weekdays.nthWeekdays,
        months: new ValueSet(1, 12, months.values),
        weekdays: new ValueSet(0, 6, weekdays.values),
        dayMode: days.star || weekdays.star ? 'and' : 'or',
    };
}
//# sourceMappingURL=cron.js.map