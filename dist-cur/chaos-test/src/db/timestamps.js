/**
 * A fast parser for timestamptz values in PostgreSQL's text output (DateStyle ISO), the form every
 * job and task row carries five or six of: `2026-11-21 04:04:34.964123+00`, with any offset
 * (`-05`, `+05:30`, `+05:45:30`). node-postgres's default (postgres-date) runs three regular
 * expressions per value; with ~30-column rows it was a visible share of a request's CPU. Anything
 * this does not recognise (infinity, BC, years before 1000, other DateStyles) goes to the default
 * parser, and both agree to the millisecond (fractions are truncated, as there).
 */
/** The value of `n` decimal digits at `at`, or -1 if one of them is not a digit. */
function digits(s, at, n) {
    let v = 0;
    for (let k = 0; k < n; k++) {
        const c = s.charCodeAt(at + k) - 48;
        if (c < 0 || c > 9)
            return -1;
        v = v * 10 + c;
    }
    return v;
}
export function fastTimestamptzParser(fallback) {
    return (s) => {
        // YYYY-MM-DD HH:MM:SS
        if (s.length < 22 || s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45 || s.charCodeAt(10) !== 32)
            return fallback(s);
        if (s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58)
            return fallback(s);
        const year = digits(s, 0, 4);
        const month = digits(s, 5, 2);
        const day = digits(s, 8, 2);
        const hour = digits(s, 11, 2);
        const minute = digits(s, 14, 2);
        const second = digits(s, 17, 2);
        if (year < 1000 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0)
            return fallback(s);
        let i = 19;
        let ms = 0;
        if (s.charCodeAt(i) === 46 /* . */) {
            i++;
            let n = 0;
            for (;;) {
                const c = s.charCodeAt(i) - 48;
                if (!(c >= 0 && c <= 9))
                    break; // NaN at the end of the text
                if (n < 3)
                    ms = ms * 10 + c;
                n++;
                i++;
            }
            if (n === 0)
                return fallback(s);
            for (; n < 3; n++)
                ms *= 10;
        }
        const sign = s.charCodeAt(i);
        if (sign !== 43 /* + */ && sign !== 45 /* - */)
            return fallback(s);
        const parts = [digits(s, i + 1, 2), 0, 0];
        let j = i + 3;
        for (let p = 1; p < 3 && j < s.length; p++) {
            if (s.charCodeAt(j) !== 58)
                return fallback(s);
            parts[p] = digits(s, j + 1, 2);
            j += 3;
        }
        if (j !== s.length || parts[0] < 0 || parts[1] < 0 || parts[2] < 0)
            return fallback(s);
        const offsetMs = (parts[0] * 3600 + parts[1] * 60 + parts[2]) * 1000 * (sign === 45 ? -1 : 1);
        return new Date(Date.UTC(year, month - 1, day, hour, minute, second, ms) - offsetMs);
    };
}
//# sourceMappingURL=timestamps.js.map