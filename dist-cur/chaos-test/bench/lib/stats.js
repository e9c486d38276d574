/** Small statistics and formatting helpers for the benchmark table. */
export function sorted(values) {
    return [...values].sort((a, b) => a - b);
}
/** Nearest-rank percentile (p in 0..100) of a non-empty list. */
export function percentile(values, p) {
    if (values.length === 0)
        return Number.NaN;
    const s = sorted(values);
    const rank = Math.ceil((p / 100) * s.length);
    return s[Math.min(s.length - 1, Math.max(0, rank - 1))];
}
export function median(values) {
    if (values.length === 0)
        return Number.NaN;
    const s = sorted(values);
    const mid = Math.floor(s.length / 2);
    return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}
export function spread(values) {
    const finite = values.filter((v) => Number.isFinite(v));
    if (finite.length === 0)
        return null;
    return { median: median(finite), min: Math.min(...finite), max: Math.max(...finite), n: finite.length };
}
export function latencySummary(samples) {
    return {
        n: samples.length,
        p50: percentile(samples, 50),
        p95: percentile(samples, 95),
        p99: percentile(samples, 99),
        max: samples.length ? Math.max(...samples) : Number.NaN,
        min: samples.length ? Math.min(...samples) : Number.NaN,
    };
}
/** 3 significant figures, thousands separated: 12,300 · 45.6 · 0.123. */
export function fmt(value) {
    if (!Number.isFinite(value))
        return String(value);
    const abs = Math.abs(value);
    if (abs >= 1000)
        return Math.round(value).toLocaleString('en-US');
    if (abs >= 100)
        return value.toFixed(0);
    if (abs >= 10)
        return value.toFixed(1);
    if (abs >= 1)
        return value.toFixed(2);
    if (abs === 0)
        return '0';
    return value.toPrecision(2);
}
export function fmtSpread(s, unit = '') {
    if (!s)
        return 'n/a';
    const u = unit ? ` ${unit}` : '';
    if (s.n === 1 || s.min === s.max)
        return `${fmt(s.median)}${u}`;
    return `${fmt(s.median)}${u} [${fmt(s.min)}–${fmt(s.max)}]`;
}
//# sourceMappingURL=stats.js.map