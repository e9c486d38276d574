/**
 * Time-zone arithmetic on top of Intl.DateTimeFormat, without a tz library.
 *
 * For every zone we lazily build, per UTC calendar year, a table of offset transitions: the offset
 * is sampled every 3 days with Intl (one cached formatter per zone) and every change is bisected to
 * the exact second. After that, instant → offset and wall time → instant are pure arithmetic.
 * Limitation: a pair of transitions less than 3 days apart that cancel each other out would go
 * unnoticed. The shortest such stretch in tzdata for 1970–2100 is ~7 days (America/Recife 2000,
 * Asia/Gaza 2040: checked against every zone in Intl.supportedValuesOf('timeZone') at 6-hour
 * resolution).
 *
 * "Wall time" below is a local date-time encoded as milliseconds as if it were UTC
 * (`Date.UTC(y, m - 1, d, h, mi, s)`); `instant = wall − offset`.
 */
const DAY = 86_400_000;
/** Widest UTC offset tzdata has ever used is just under 16 h (local mean times); bound with margin. */
const MAX_OFFSET = 16 * 3_600_000;
const zones = new Map();
function makeFormatter(name) {
    return new Intl.DateTimeFormat('en-US', {
        timeZone: name,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
    });
}
const FORMAT = /^(\d+)\/(\d+)\/(\d+),? (\d+):(\d+):(\d+)$/;
/** Offset sampling step when building a year's table; changes between samples are bisected. */
const SAMPLE_STEP = 3 * DAY;
/** A year gets a transition table once it has been looked up this often (next() looks up ~3 times). */
const TABLE_AFTER_LOOKUPS = 48;
class IntlZone {
    name;
    fixedOffset;
    fmt;
    years = new Map();
    // The table used last, with its UTC range, to skip the map lookup.
    lastTable = null;
    lastStart = 0;
    lastEnd = 0;
    /** Lookups per year that has no table yet: sparse schedules (monthly, yearly) probe Intl directly. */
    touches = new Map();
    constructor(name, fmt, canonical) {
        this.name = name;
        this.fmt = fmt;
        this.fixedOffset = /^(UTC|GMT|Etc\/.*)$/.test(canonical) ? this.rawOffset(Date.UTC(2000, 0, 1)) : null;
    }
    /** Offset straight from Intl (seconds precision). */
    rawOffset(instant) {
        const t = Math.floor(instant / 1000) * 1000;
        const m = FORMAT.exec(this.fmt.format(t));
        let wall;
        if (m) {
            wall = Date.UTC(Number(m[3]), Number(m[1]) - 1, Number(m[2]), Number(m[4]) % 24, Number(m[5]), Number(m[6]));
        }
        else {
            // Unexpected layout: fall back to the slower, layout-independent API.
            const parts = {};
            for (const p of this.fmt.formatToParts(t))
                if (p.type !== 'literal')
                    parts[p.type] = Number(p.value);
            wall = Date.UTC(parts.year ?? 1970, (parts.month ?? 1) - 1, parts.day ?? 1, (parts.hour ?? 0) % 24, parts.minute ?? 0, parts.second ?? 0);
        }
        return wall - t;
    }
    buildTable(year) {
        const start = Date.UTC(year, 0, 1);
        const end = Date.UTC(year + 1, 0, 1);
        const startOffset = this.rawOffset(start);
        const at = [];
        const offset = [];
        let prevT = start;
        let prevO = startOffset;
        for (let t = start + SAMPLE_STEP; prevT < end; t += SAMPLE_STEP) {
            const tt = Math.min(t, end);
            const o = this.rawOffset(tt);
            while (o !== prevO) {
                // Bisect (prevT, tt] for the first second showing a different offset.
                let lo = prevT;
                let hi = tt;
                while (hi - lo > 1000) {
                    const mid = Math.floor((lo + hi) / 2000) * 1000;
                    if (this.rawOffset(mid) === prevO)
                        lo = mid;
                    else
                        hi = mid;
                }
                prevO = hi === tt ? o : this.rawOffset(hi);
                prevT = hi;
                if (hi < end) {
                    at.push(hi);
                    offset.push(prevO);
                }
                // If prevO still differs from o, a second change hides in (hi, tt]: loop again.
            }
            prevT = tt;
        }
        return { startOffset, at, offset };
    }
    /** The table of the UTC year containing `instant`. */
    tableAt(instant) {
        if (this.lastTable !== null && instant >= this.lastStart && instant < this.lastEnd)
            return this.lastTable;
        const year = new Date(instant).getUTCFullYear();
        let tbl = this.years.get(year);
        if (tbl === undefined) {
            tbl = this.buildTable(year);
            this.years.set(year, tbl);
        }
        this.lastTable = tbl;
        this.lastStart = Date.UTC(year, 0, 1);
        this.lastEnd = Date.UTC(year + 1, 0, 1);
        return tbl;
    }
    /**
     * The year's table if it exists or the year has been looked up often enough to be worth one
     * (~125 Intl calls); otherwise null and the caller asks Intl directly (1–2 calls).
     */
    warmTableAt(instant) {
        if (this.lastTable !== null && instant >= this.lastStart && instant < this.lastEnd)
            return this.lastTable;
        const year = new Date(instant).getUTCFullYear();
        if (this.years.has(year))
            return this.tableAt(instant);
        const n = (this.touches.get(year) ?? 0) + 1;
        if (n >= TABLE_AFTER_LOOKUPS) {
            this.touches.delete(year);
            return this.tableAt(instant);
        }
        if (this.touches.size >= 10_000)
            this.touches.clear();
        this.touches.set(year, n);
        return null;
    }
    offsetAt(instant) {
        if (this.fixedOffset !== null)
            return this.fixedOffset;
        const tbl = this.warmTableAt(instant);
        if (tbl === null)
            return this.rawOffset(instant);
        let o = tbl.startOffset;
        for (let i = 0; i < tbl.at.length && tbl.at[i] <= instant; i++)
            o = tbl.offset[i];
        return o;
    }
    resolve(wall) {
        if (this.fixedOffset !== null)
            return { instants: [wall - this.fixedOffset], resumeWall: wall + 1000 };
        const lo = wall - MAX_OFFSET;
        const hi = wall + MAX_OFFSET;
        if (this.warmTableAt(lo) === null || this.warmTableAt(hi) === null) {
            // Cold year: the same offset at both ends of the window means no transition inside it (tzdata
            // never has two transitions within 32 h); otherwise fall through and build the tables.
            const oLo = this.rawOffset(lo);
            if (oLo === this.rawOffset(hi))
                return { instants: [wall - oLo], resumeWall: wall + 1000 };
        }
        const loTable = this.tableAt(lo);
        const loEnd = this.lastEnd;
        const offset0 = this.offsetAt(lo);
        // Segments of constant offset over the window: starts[i] is where offsets[i] begins.
        const starts = [Number.NEGATIVE_INFINITY];
        const offsets = [offset0];
        for (const tbl of hi < loEnd ? [loTable] : [loTable, this.tableAt(hi)]) {
            for (let i = 0; i < tbl.at.length; i++) {
                const a = tbl.at[i];
                if (a > lo && a <= hi) {
                    starts.push(a);
                    offsets.push(tbl.offset[i]);
                }
            }
        }
        const n = starts.length;
        if (n === 1)
            return { instants: [wall - offsets[0]], resumeWall: wall + 1000 };
        const instants = [];
        let firstSeg = -1;
        for (let i = 0; i < n; i++) {
            const t = wall - offsets[i];
            const segEnd = i + 1 < n ? starts[i + 1] : Number.POSITIVE_INFINITY;
            if (t >= starts[i] && t < segEnd) {
                if (firstSeg < 0)
                    firstSeg = i;
                instants.push(t);
            }
        }
        if (instants.length === 0) {
            // In a gap: the wall times [start + offsetBefore, start + offsetAfter) do not exist.
            for (let i = 1; i < n; i++) {
                const s = starts[i];
                if (wall >= s + offsets[i - 1] && wall < s + offsets[i]) {
                    return { instants, resumeWall: s + offsets[i] };
                }
            }
            return { instants, resumeWall: wall + 1000 };
        }
        if (instants.length > 1) {
            // The first segment showing this wall time ends at starts[firstSeg + 1]; in wall time, that is
            // where the repeated stretch ends.
            const end = starts[firstSeg + 1] + offsets[firstSeg];
            return { instants, resumeWall: Math.max(end, wall + 1000) };
        }
        return { instants, resumeWall: wall + 1000 };
    }
}
/** The zone for an IANA name, or null when Intl does not know it. Cached (formatter and tables). */
export function getZone(name) {
    const cached = zones.get(name);
    if (cached !== undefined)
        return cached;
    let zone = null;
    if (typeof name === 'string' && name.trim() === name && name !== '' && !/^[+-]/.test(name)) {
        try {
            const fmt = makeFormatter(name);
            zone = new IntlZone(name, fmt, fmt.resolvedOptions().timeZone);
        }
        catch {
            zone = null;
        }
    }
    if (zones.size > 10_000)
        zones.clear();
    zones.set(name, zone);
    return zone;
}
//# sourceMappingURL=timezone.js.map