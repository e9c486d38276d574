import { jobDeleteOld, jobSearchUpkeep } from '../repositories/jobs.js';
import { deliveryDeleteOld } from '../repositories/webhooks.js';
import { slotRecordDeleteOld } from '../repositories/task-runs.js';
import { Loop, LoopService } from './loop.js';
/**
 * Deletes final jobs (finished, failed, dropped, cancelled) older than the retention
 * (JOBCLOCK_RETENTION), and webhook deliveries no longer pending, in bounded batches that skip
 * rows another instance is deleting. Its own loop, apart from the LeaseReaper's second-by-second
 * one: a large sweep must not delay the requeueing of expired leases. Each sweep then keeps job_search's partitions (migration 0018):
 * creates them ahead of the job ids, drops those retention emptied.
 */
export class RetentionCleaner extends LoopService {
    ctx;
    loop;
    everyMs;
    batchSize;
    maxBatches;
    catchUpMs;
    searchPartitionWidth;
    behind = false;
    constructor(ctx, options = {}) {
        super();
        this.ctx = ctx;
        this.everyMs = options.everyMs ?? 60_000;
        this.batchSize = options.batchSize ?? 1_000;
        this.maxBatches = options.maxBatches ?? 20;
        this.catchUpMs = options.catchUpMs ?? 3_000;
        this.searchPartitionWidth = options.searchPartitionWidth;
        this.loop = new Loop({
            name: 'retention sweep',
            logger: ctx.logger,
            clock: ctx.clock,
            step: async () => {
                await this.tick(this.ctx.clock.now());
                // a backlog (a retention just shortened, or more jobs ending than a sweep a minute deletes)
                // is taken in sweeps a moment apart, each a few short statements, until it is gone
                return this.behind ? this.catchUpMs : this.everyMs;
            },
            failureBackoff: { initialMs: 1_000, maxMs: this.everyMs },
        });
    }
    /** One sweep at `now`: returns how many jobs it deleted. */
    async tick(now) {
        const before = new Date(now.getTime() - this.ctx.retentionMs);
        this.behind = false;
        const total = await this.sweep((limit) => jobDeleteOld(this.ctx.db, before, limit));
        if (total > 0)
            this.ctx.logger.info({ deleted: total, before }, 'deleted final jobs older than the retention');
        // webhook deliveries that were delivered or given up on, with the jobs of their time
        const deliveries = await this.sweep((limit) => deliveryDeleteOld(this.ctx.db, before, limit));
        if (deliveries > 0)
            this.ctx.logger.info({ deleted: deliveries, before }, 'deleted webhook deliveries older than the retention');
        // the run ledger's records of slots without a job expire with the jobs of their time
        const records = await this.sweep((limit) => slotRecordDeleteOld(this.ctx.db, before, limit));
        if (records > 0)
            this.ctx.logger.info({ deleted: records, before }, 'deleted run ledger records older than the retention');
        const parts = await jobSearchUpkeep(this.ctx.db, this.searchPartitionWidth);
        if (parts.created > 0 || parts.dropped > 0)
            this.ctx.logger.info(parts, 'job_search partitions created ahead of the job ids, or dropped behind them');
        return total;
    }
    /** Deletes in statements of batchSize rows, at most maxBatches of them; a full last one leaves the sweep behind. */
    async sweep(deleteSome) {
        let total = 0;
        for (let i = 0; i < this.maxBatches; i++) {
            const n = await deleteSome(this.batchSize);
            total += n;
            if (n < this.batchSize)
                break;
            if (i === this.maxBatches - 1)
                this.behind = true;
        }
        return total;
    }
}
//# sourceMappingURL=retention-cleaner.js.map