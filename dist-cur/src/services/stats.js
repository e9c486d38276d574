import { jobThroughput } from '../repositories/stats.js';
/** Figures for operators that are not one job's: throughput per minute. */
export class StatsService {
    ctx;
    constructor(ctx) {
        this.ctx = ctx;
    }
    /** Jobs finished and failed per minute over the last `minutes` minutes, the current one last. */
    throughput(minutes, type) {
        return jobThroughput(this.ctx.db, this.ctx.clock.now(), minutes, type);
    }
}
//# sourceMappingURL=stats.js.map