/**
 * Schedule engine throughput: next-occurrence computations per second for each grammar.
 * Each case chains next() (from each result to the following one) for about a second after a
 * short warm-up, wrapping back to the start once it reaches 2100 so it stays in realistic years.
 *
 * Run alone (after `npm run build`): `node dist/bench/schedules.js`.
 */
import { pathToFileURL } from 'node:url';
import { parseSchedule } from '../src/domain/schedule/index.js';
const START = Date.UTC(2026, 0, 1);
const WRAP = Date.UTC(2100, 0, 1);
const CASES = [
    { name: 'interval: every 5m offset 1m', source: 'every 5m offset 1m', timezone: 'UTC', ctx: { anchor: new Date(START) } },
    { name: 'cron 5-field: */5 9-17 * * 1-5 (UTC)', source: '*/5 9-17 * * 1-5', timezone: 'UTC' },
    { name: 'cron with DST zone: 30 2 * * * (Europe/Berlin)', source: '30 2 * * *', timezone: 'Europe/Berlin' },
    { name: 'cron with DST zone: */30 * * * * (America/New_York)', source: '*/30 * * * *', timezone: 'America/New_York' },
    { name: 'calendar: Mon..Fri *-*-* 09:00 (Europe/Berlin)', source: 'Mon..Fri *-*-* 09:00', timezone: 'Europe/Berlin' },
    { name: 'calendar: *-*~1 18:00 (UTC)', source: '*-*~1 18:00', timezone: 'UTC' },
];
function run(c, durationMs) {
    const s = parseSchedule(c.source, c.timezone);
    let t = new Date(START);
    let ops = 0;
    const began = performance.now();
    let elapsed = 0;
    while (elapsed < durationMs) {
        for (let i = 0; i < 1000; i++) {
            const n = s.next(t, c.ctx);
            t = n === null || n.getTime() >= WRAP ? new Date(START) : n;
        }
        ops += 1000;
        elapsed = performance.now() - began;
    }
    return (ops / elapsed) * 1000;
}
/** Measures next() throughput for each grammar; no output. */
export async function benchSchedules(durationMs = 1000) {
    const results = [];
    for (const c of CASES) {
        run(c, Math.min(200, durationMs)); // warm-up: JIT and the zone's offset tables
        results.push({ name: c.name, opsPerSec: Math.round(run(c, durationMs)) });
        await new Promise((resolve) => setImmediate(resolve)); // stay friendly to a shared event loop
    }
    return results;
}
const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(invokedAs).href) {
    const results = await benchSchedules();
    const width = Math.max(...results.map((r) => r.name.length));
    console.log(`${'schedule'.padEnd(width)}  next()/s`);
    for (const r of results)
        console.log(`${r.name.padEnd(width)}  ${r.opsPerSec.toLocaleString('en-US').padStart(10)}`);
}
//# sourceMappingURL=schedules.js.map