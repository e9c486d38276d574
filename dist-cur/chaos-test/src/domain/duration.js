/**
 * Durations as users write them: Go-style unit combinations (`500ms`, `12s`, `6m`, `1h30m`, `2d`,
 * `1.5h`) or ISO 8601 durations (`PT12S`, `P1DT2H`, `PT0.5S`, `P1W`). Pure functions, no I/O.
 */
import { InvalidInputError } from './errors.js';
export const MS_PER_SECOND = 1_000;
export const MS_PER_MINUTE = 60 * MS_PER_SECOND;
export const MS_PER_HOUR = 60 * MS_PER_MINUTE;
export const MS_PER_DAY = 24 * MS_PER_HOUR;
export const MS_PER_WEEK = 7 * MS_PER_DAY;
/** Longest duration accepted (100 × 365 days): far beyond any sane use, far below Date overflow. */
export const MAX_DURATION_MS = 36_500 * MS_PER_DAY;
const GO_UNITS = {
    ms: 1,
    s: MS_PER_SECOND,
    m: MS_PER_MINUTE,
    h: MS_PER_HOUR,
    d: MS_PER_DAY,
};
const HINT = 'use ms, s, m, h, d or ISO 8601 like PT5S';
const GO_PART = /^(\d+(?:\.\d*)?|\.\d+)([a-zA-Zµμ]*)/;
const ISO = /^P(?:(\d+(?:[.,]\d+)?)Y)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)W)?(?:(\d+(?:[.,]\d+)?)D)?(?:T(?:(\d+(?:[.,]\d+)?)H)?(?:(\d+(?:[.,]\d+)?)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/i;
function fail(path, message) {
    throw new InvalidInputError(message, [{ path, message }]);
}
/** Turns a number of milliseconds computed in floating point into an exact integer, or fails. */
function wholeMilliseconds(text, ms, path) {
    if (!Number.isFinite(ms))
        fail(path, `duration "${text}" is not a finite length`);
    const rounded = Math.round(ms);
    if (Math.abs(ms - rounded) > 1e-6 * Math.max(1, Math.abs(ms))) {
        fail(path, `duration "${text}" is not a whole number of milliseconds`);
    }
    if (rounded > MAX_DURATION_MS)
        fail(path, `duration "${text}" is too long (at most ${formatDuration(MAX_DURATION_MS)})`);
    return rounded;
}
/**
 * Parses a duration into milliseconds. Throws InvalidInputError (code `invalid_input`) with one
 * issue at `path` naming what is wrong. Zero is allowed; callers decide their minimums.
 */
export function parseDuration(text, path = '/duration') {
    if (typeof text !== 'string')
        fail(path, 'duration must be a string like "30s", "1h30m" or "PT30S"');
    const src = text.trim();
    if (src === '')
        fail(path, 'duration is empty; write it like "30s", "1h30m" or "PT30S"');
    if (src.startsWith('-'))
        fail(path, `duration "${text}" must not be negative`);
    const body = src.startsWith('+') ? src.slice(1) : src;
    if (/^p/i.test(body))
        return parseIso(text, body, path);
    if (/\s/.test(body)) {
        fail(path, `duration "${text}" must not contain spaces; write it like "${body.replace(/\s+/g, '')}"`);
    }
    if (body === '0')
        return 0;
    let rest = body;
    let total = 0;
    while (rest.length > 0) {
        const m = GO_PART.exec(rest);
        if (!m) {
            fail(path, `cannot read "${rest}" in duration "${text}"; expected a number followed by a unit (${HINT})`);
        }
        const [whole, num, unit] = m;
        if (unit === '')
            fail(path, `missing unit after "${num}" in "${text}"; ${HINT}`);
        const factor = GO_UNITS[unit];
        if (factor === undefined)
            fail(path, `unknown unit "${unit}" in "${text}"; ${HINT}`);
        total += Number(num) * factor;
        rest = rest.slice(whole.length);
    }
    return wholeMilliseconds(text, total, path);
}
function parseIso(text, body, path) {
    const m = ISO.exec(body);
    const hasT = /t/i.test(body);
    if (!m || /^P$/i.test(body) || (hasT && /T$/i.test(body))) {
        fail(path, `"${text}" is not an ISO 8601 duration; write it like PT30S, PT1H30M, P1DT2H or P1W (or Go-style like 1h30m)`);
    }
    const [, years, months, weeks, days, hours, minutes, seconds] = m;
    if (years !== undefined || months !== undefined) {
        fail(path, `ISO 8601 duration "${text}" uses years or months, which have no fixed length; use weeks or days (P4W, P30D) instead`);
    }
    const num = (s) => (s === undefined ? 0 : Number(s.replace(',', '.')));
    const total = num(weeks) * MS_PER_WEEK +
        num(days) * MS_PER_DAY +
        num(hours) * MS_PER_HOUR +
        num(minutes) * MS_PER_MINUTE +
        num(seconds) * MS_PER_SECOND;
    return wholeMilliseconds(text, total, path);
}
/**
 * Canonical Go-style rendering with days: `1h30m`, `500ms`, `2d`, `1m30s`, `1d2h`, `0s`.
 * Fractional milliseconds are rounded; negative values get a leading `-`.
 */
export function formatDuration(ms) {
    if (!Number.isFinite(ms))
        throw new RangeError(`cannot format a non-finite duration (${ms})`);
    let rest = Math.round(Math.abs(ms));
    if (rest === 0)
        return '0s';
    const parts = [];
    for (const [unit, size] of [
        ['d', MS_PER_DAY],
        ['h', MS_PER_HOUR],
        ['m', MS_PER_MINUTE],
        ['s', MS_PER_SECOND],
        ['ms', 1],
    ]) {
        const n = Math.floor(rest / size);
        if (n > 0) {
            parts.push(`${n}${unit}`);
            rest -= n * size;
        }
    }
    return (ms < 0 ? '-' : '') + parts.join('');
}
//# sourceMappingURL=duration.js.map