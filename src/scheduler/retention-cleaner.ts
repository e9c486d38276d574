import { jobDeleteOld, jobSearchUpkeep } from '../repositories/jobs.js';
import { deliveryDeleteOld } from '../repositories/webhooks.js';
import { slotRecordDeleteOld } from '../repositories/task-runs.js';
import type { ServiceContext } from '../services/context.js';
import { Loop, LoopService } from './loop.js';

export interface CleanerOptions {
  /** Time between sweeps (default 1 min). */
  everyMs?: number;
  /** Rows per statement. */
  batchSize?: number;
  /** Most statements per sweep; the rest waits for the next sweep, so a backlog never holds the loop long. */
  maxBatches?: number;
  /** The pause before the next sweep when one stopped at maxBatches with more to delete (default 3 s: a backlog goes at some 5,000 jobs a second, well above what a busy instance finishes, and the workers keep most of the database). */
  catchUpMs?: number;
  /** Ids per partition of job_search, at least (default: jobclock_search_upkeep's, a million; migration 0018). */
  searchPartitionWidth?: number;
}

/**
 * Deletes final jobs (finished, failed, dropped, cancelled) older than the retention
 * (JOBCLOCK_RETENTION), and webhook deliveries no longer pending, in bounded batches that skip
 * rows another instance is deleting. Its own loop, apart from the LeaseReaper's second-by-second
 * one: a large sweep must not delay the requeueing of expired leases. Each sweep then keeps job_search's partitions (migration 0018):
 * creates them ahead of the job ids, drops those retention emptied.
 */
export class RetentionCleaner extends LoopService {
  protected readonly loop: Loop;
  private readonly everyMs: number;
  private readonly batchSize: number;
  private readonly maxBatches: number;
  private readonly catchUpMs: number;
  private readonly searchPartitionWidth: number | undefined;
  private behind = false;

  constructor(
    readonly ctx: ServiceContext,
    options: CleanerOptions = {},
  ) {
    super();
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
  async tick(now: Date): Promise<number> {
    const before = new Date(now.getTime() - this.ctx.retentionMs);
    this.behind = false;
    const total = await this.sweep((limit) => jobDeleteOld(this.ctx.db, before, limit));
    if (total > 0) this.ctx.logger.info({ deleted: total, before }, 'deleted final jobs older than the retention');
    // webhook deliveries that were delivered or given up on, with the jobs of their time
    const deliveries = await this.sweep((limit) => deliveryDeleteOld(this.ctx.db, before, limit));
    if (deliveries > 0) this.ctx.logger.info({ deleted: deliveries, before }, 'deleted webhook deliveries older than the retention');
    // the run ledger's records of slots without a job expire with the jobs of their time
    const records = await this.sweep((limit) => slotRecordDeleteOld(this.ctx.db, before, limit));
    if (records > 0) this.ctx.logger.info({ deleted: records, before }, 'deleted run ledger records older than the retention');
    const parts = await jobSearchUpkeep(this.ctx.db, this.searchPartitionWidth);
    if (parts.created > 0 || parts.dropped > 0)
      this.ctx.logger.info(parts, 'job_search partitions created ahead of the job ids, or dropped behind them');
    return total;
  }

  /** Deletes in statements of batchSize rows, at most maxBatches of them; a full last one leaves the sweep behind. */
  private async sweep(deleteSome: (limit: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.maxBatches; i++) {
      const n = await deleteSome(this.batchSize);
      total += n;
      if (n < this.batchSize) break;
      if (i === this.maxBatches - 1) this.behind = true;
    }
    return total;
  }
}
