/** (i) next-occurrence computations per second for each grammar, from bench/schedules.ts. */
import { benchSchedules } from '../schedules.js';
/** Milliseconds per case (after bench/schedules.ts's own warm-up); every round measures again. */
const caseMs = (ctx) => Math.min(250, Math.max(150, Math.round(250 * ctx.scale)));
/** One unit for all grammars; `extra` holds one figure per case name. */
export const scheduleEngine = {
    key: 'i.schedules',
    guardMs: () => 120_000,
    async run(ctx) {
        const figures = await benchSchedules(caseMs(ctx));
        if (figures.length === 0)
            throw new Error('benchSchedules() returned no figures');
        const extra = {};
        for (const f of figures)
            extra[f.name] = f.opsPerSec;
        return { value: Number.NaN, extra };
    },
};
//# sourceMappingURL=schedule-engine.js.map