import { setTimeout as delay } from 'node:timers/promises';
import { jobSearchSealAndCopy, jobSearchSlicesDue, SEAL_WAIT_MS, SEARCH_SLICE } from '../repositories/jobs.js';
import { intervalLoop, LoopService } from './loop.js';
/**
 * Fills job_search in bulk (migration 0030): every few seconds, each slice of job ids that the ids
 * given out have passed, and whose jobs are mostly no longer queued, is sealed and its final jobs'
 * search rows copied in one statement — work the reports did row by row before, which was the
 * larger part of what a finished job cost PostgreSQL. Safe with any number of instances: one
 * copies at a time, the others find it busy.
 */
export class SearchRowCopier extends LoopService {
    ctx;
    loop;
    width;
    sealWaitMs;
    constructor(ctx, options = {}) {
        super();
        this.ctx = ctx;
        this.width = options.sliceWidth ?? SEARCH_SLICE;
        this.sealWaitMs = options.sealWaitMs ?? SEAL_WAIT_MS;
        this.loop = intervalLoop('search row copy', ctx, options.intervalMs ?? 2_000, () => this.tick());
    }
    /** One step: the slices due sealed, and every sealed range not copied yet copied. */
    async tick() {
        const slices = await jobSearchSlicesDue(this.ctx.db, this.width);
        const started = performance.now();
        const kept = await jobSearchSealAndCopy(this.ctx.db, slices, { sleep: (ms) => delay(ms), maxMs: this.sealWaitMs });
        if (kept === 'busy')
            return { sealed: 0, copied: 0 }; // another instance is at it
        if (kept.copied === null) {
            this.ctx.logger.info({ sealed: kept.sealed }, 'job_search slices sealed; their rows are copied once older transactions end');
            return { sealed: kept.sealed, copied: 0 };
        }
        if (kept.sealed > 0 || kept.copied > 0)
            this.ctx.logger.debug({ sealed: kept.sealed, copied: kept.copied, ms: Math.round(performance.now() - started) }, 'job_search slices sealed and their search rows copied');
        return { sealed: kept.sealed, copied: kept.copied };
    }
}
//# sourceMappingURL=search-row-copier.js.map