import { jobSearchFlush } from '../repositories/jobs.js';
import { intervalLoop, LoopService } from './loop.js';
/**
 * Merges the pending lists of job_search's GIN indexes (args, trigrams) every interval (migration
 * 0020; JOBCLOCK_SEARCH_FLUSH, off by default), so that the merge is not left to whichever worker's
 * report overflows a list: that report took 80-290 ms instead of 4-15. Safe with any number of
 * instances: one merges at a time, the others find it busy and skip.
 */
export class SearchIndexFlusher extends LoopService {
    ctx;
    loop;
    constructor(ctx, options = {}) {
        super();
        this.ctx = ctx;
        this.loop = intervalLoop('search index flush', ctx, options.intervalMs ?? 1_000, () => this.tick());
    }
    /** One flush: the pending pages merged (0 when another instance was at it). */
    async tick() {
        const started = performance.now();
        const pages = await jobSearchFlush(this.ctx.db);
        if (pages > 0)
            this.ctx.logger.debug({ pages, ms: Math.round(performance.now() - started) }, "merged the search indexes' pending lists");
        return pages;
    }
}
//# sourceMappingURL=search-flusher.js.map