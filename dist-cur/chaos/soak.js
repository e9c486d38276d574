/**
 * `npm run soak`: the chaos suite's load (chaos/run.ts) without faults for SOAK_MINUTES (default
 * 30), sampling each instance's resident memory and event-loop lag (p99) from /metrics every 10 s;
 * prints them over time and whether memory levelled off (the RSS slope of the last third of the run
 * against the first). The same end checks as the chaos run.
 */
process.env.CHAOS_MODE = 'soak';
await import('./run.js');
export {};
//# sourceMappingURL=soak.js.map