/**
 * The compiled form shared by cron and calendar schedules: allowed values per wall-clock field,
 * searched field by field (year → month → day → hour → minute → second), never minute by minute.
 */
/** A set of small integers with O(1) "smallest allowed value ≥ v" lookups. */
export class ValueSet {
    /** next[v] = smallest allowed value ≥ v, or -1. Has one extra slot past `max` (always -1). */
    nextTable;
    min;
    max;
    constructor(min, max, values) {
        this.min = min;
        this.max = max;
        const has = new Uint8Array(max + 2);
        for (const v of values)
            if (v >= min && v <= max)
                has[v] = 1;
        this.nextTable = new Int16Array(max + 2).fill(-1);
        let next = -1;
        for (let v = max; v >= 0; v--) {
            if (has[v])
                next = v;
            this.nextTable[v] = v >= min ? next : -1;
        }
        // Values below min map to the first allowed value.
        for (let v = 0; v < min; v++)
            this.nextTable[v] = this.nextTable[min];
    }
    /** Smallest allowed value ≥ v, or -1. */
    next(v) {
        if (v > this.max)
            return -1;
        return this.nextTable[v < 0 ? 0 : v];
    }
    has(v) {
        return v >= this.min && v <= this.max && this.nextTable[v] === v;
    }
    get isEmpty() {
        return this.next(this.min) < 0;
    }
    static all(min, max) {
        const vals = [];
        for (let v = min; v <= max; v++)
            vals.push(v);
        return new ValueSet(min, max, vals);
    }
}
export function daysInMonth(y, mo) {
    switch (mo) {
        case 2:
            return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
        case 4:
        case 6:
        case 9:
        case 11:
            return 30;
        default:
            return 31;
    }
}
const DAY_MS = 86_400_000;
/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
export function daysFromCivil(y, m, d) {
    const yy = m <= 2 ? y - 1 : y;
    const era = Math.floor(yy / 400);
    const yoe = yy - era * 400;
    const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
    const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
    return era * 146_097 + doe - 719_468;
}
/** 0 = Sunday. */
export function weekday(y, mo, d) {
    const r = (daysFromCivil(y, mo, d) + 4) % 7; // 1970-01-01 was a Thursday
    return r < 0 ? r + 7 : r;
}
/** Splits a wall time (local time encoded as if UTC, in ms) into fields, without Date. */
export function wallToFields(wall) {
    const days = Math.floor(wall / DAY_MS);
    let rest = Math.floor((wall - days * DAY_MS) / 1000);
    const h = Math.floor(rest / 3600);
    rest -= h * 3600;
    const mi = Math.floor(rest / 60);
    const s = rest - mi * 60;
    // civil_from_days
    const z = days + 719_468;
    const era = Math.floor(z / 146_097);
    const doe = z - era * 146_097;
    const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
    const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
    const mp = Math.floor((5 * doy + 2) / 153);
    const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
    const mo = mp < 10 ? mp + 3 : mp - 9;
    const y = yoe + era * 400 + (mo <= 2 ? 1 : 0);
    return { y, mo, d, h, mi, s };
}
export function fieldsToWall(f) {
    return daysFromCivil(f.y, f.mo, f.d) * DAY_MS + ((f.h * 60 + f.mi) * 60 + f.s) * 1000;
}
/** Smallest year ≥ y allowed by the rules, or -1. */
export function nextYear(years, y) {
    if (years === null)
        return y;
    let best = -1;
    for (const r of years) {
        let k;
        if (y <= r.start)
            k = r.start;
        else
            k = r.start + Math.ceil((y - r.start) / r.step) * r.step;
        if (k <= r.end && (best < 0 || k < best))
            best = k;
    }
    return best;
}
function lastDayMatches(rules, d, dim) {
    for (const r of rules) {
        const lo = dim + 1 - r.far;
        const hi = dim + 1 - r.near;
        if (d >= lo && d <= hi && (d - lo) % r.step === 0)
            return true;
    }
    return false;
}
/**
 * The day a `W` rule picks in a month: `day` itself on Monday to Friday, else the nearest weekday in
 * the same month (Saturday → Friday before, or Monday after when the 1st is a Saturday; Sunday →
 * Monday after, or Friday before when it is the month's last day). `day` 0 = the last day (`LW`).
 * -1 when the month has no such day (`31W` in April), as plain `31` does not fire in April.
 */
export function nearestWeekday(y, mo, day) {
    const dim = daysInMonth(y, mo);
    const d = day === 0 ? dim : day;
    if (d > dim)
        return -1;
    const dow = weekday(y, mo, d);
    if (dow === 6)
        return d > 1 ? d - 1 : d + 2;
    if (dow === 0)
        return d < dim ? d + 1 : d - 2;
    return d;
}
function nthWeekdayMatches(rules, d, dow, dim) {
    for (const r of rules) {
        if (r.weekday !== dow)
            continue;
        if (r.nth === -1 ? d > dim - 7 : Math.ceil(d / 7) === r.nth)
            return true;
    }
    return false;
}
/** Bit mask of the days of a month that match the day-of-month, last-day and weekday rules. */
function dayMask(spec, y, mo) {
    const key = y * 12 + mo;
    const cached = spec.dayMasks.get(key);
    if (cached !== undefined)
        return cached;
    const dim = daysInMonth(y, mo);
    const hasLast = spec.lastDays.length > 0;
    const hasNth = spec.nthWeekdays.length > 0;
    let nearest = 0;
    for (const w of spec.nearestWeekdays) {
        const d = nearestWeekday(y, mo, w);
        if (d > 0)
            nearest |= 1 << (d - 1);
    }
    let mask = 0;
    for (let dd = 1, dow = weekday(y, mo, 1); dd <= dim; dd++, dow = dow === 6 ? 0 : dow + 1) {
        const domOk = spec.days.has(dd) || (hasLast && lastDayMatches(spec.lastDays, dd, dim)) || (nearest & (1 << (dd - 1))) !== 0;
        const dowOk = spec.weekdays.has(dow) || (hasNth && nthWeekdayMatches(spec.nthWeekdays, dd, dow, dim));
        if (spec.dayMode === 'and' ? domOk && dowOk : domOk || dowOk)
            mask |= 1 << (dd - 1);
    }
    if (spec.dayMasks.size >= 4096)
        spec.dayMasks.clear();
    spec.dayMasks.set(key, mask);
    return mask;
}
/** Smallest matching day ≥ d in the month, or -1. */
function nextDay(spec, y, mo, d) {
    if (d > 31)
        return -1;
    const rest = dayMask(spec, y, mo) >>> (d - 1);
    if (rest === 0)
        return -1;
    return d + 31 - Math.clz32(rest & -rest);
}
/**
 * Smallest wall time ≥ `start` (inclusive) matching the spec, with year ≤ maxYear; null if none.
 */
export function nextWallMatch(spec, start, maxYear) {
    let { y, mo, d, h, mi, s } = start;
    for (let guard = 0; guard < 1_000_000; guard++) {
        if (y > maxYear)
            return null;
        const y2 = nextYear(spec.years, y);
        if (y2 < 0 || y2 > maxYear)
            return null;
        if (y2 !== y) {
            y = y2;
            mo = 1;
            d = 1;
            h = mi = s = 0;
        }
        const mo2 = spec.months.next(mo);
        if (mo2 < 0) {
            y++;
            mo = 1;
            d = 1;
            h = mi = s = 0;
            continue;
        }
        if (mo2 !== mo) {
            mo = mo2;
            d = 1;
            h = mi = s = 0;
        }
        const d2 = nextDay(spec, y, mo, d);
        if (d2 < 0) {
            mo++;
            if (mo > 12) {
                mo = 1;
                y++;
            }
            d = 1;
            h = mi = s = 0;
            continue;
        }
        if (d2 !== d) {
            d = d2;
            h = mi = s = 0;
        }
        const h2 = spec.hours.next(h);
        if (h2 < 0) {
            d++;
            h = mi = s = 0;
            continue;
        }
        if (h2 !== h) {
            h = h2;
            mi = s = 0;
        }
        const mi2 = spec.minutes.next(mi);
        if (mi2 < 0) {
            h++;
            mi = s = 0;
            if (h > 23) {
                h = 0;
                d++;
            }
            continue;
        }
        if (mi2 !== mi) {
            mi = mi2;
            s = 0;
        }
        const s2 = spec.seconds.next(s);
        if (s2 < 0) {
            mi++;
            s = 0;
            if (mi > 59) {
                mi = 0;
                h++;
                if (h > 23) {
                    h = 0;
                    d++;
                }
            }
            continue;
        }
        return { y, mo, d, h, mi, s: s2 };
    }
    return null;
}
//# sourceMappingURL=spec.js.map