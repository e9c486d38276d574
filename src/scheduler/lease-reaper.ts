import { reapDecision } from '../domain/job.js';
import { jobDeleteOld, jobFindOverdue, jobReap, type ReapAction } from '../repositories/jobs.js';
import type { ServiceContext } from '../services/context.js';

export interface ReaperOptions {
  /** Time between ticks (default 1 s: an expired lease is leasable again within ~1 s). */
  intervalMs?: number;
  /** Time between retention sweeps (default 1 min). */
  retentionEveryMs?: number;
  /** Rows per statement. */
  batchSize?: number;
  /** Most retention statements per sweep; the rest waits for the next sweep. */
  maxDeleteBatches?: number;
}

export interface TickResult {
  requeued: number;
  failed: number;
  timedOut: number;
  deleted: number;
}

/**
 * Requeues or fails jobs whose lease expired, fails jobs past deadline + grace with a timebox error,
 * and deletes final jobs older than the retention. Safe with any number of instances: every change
 * is a compare-and-set on the lease token, and deletes skip rows another instance holds.
 */
export class LeaseReaper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;
  private lastRetention = Number.NEGATIVE_INFINITY;
  private readonly intervalMs: number;
  private readonly retentionEveryMs: number;
  private readonly batchSize: number;
  private readonly maxDeleteBatches: number;

  constructor(
    readonly ctx: ServiceContext,
    options: ReaperOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1_000;
    this.retentionEveryMs = options.retentionEveryMs ?? 60_000;
    this.batchSize = options.batchSize ?? 1_000;
    this.maxDeleteBatches = options.maxDeleteBatches ?? 20;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.tick(this.ctx.clock.now())
        .catch((err: unknown) => this.ctx.logger.warn({ err: { message: (err as Error).message } }, 'lease reaper tick failed; trying again'))
        .finally(() => {
          this.running = null;
          this.schedule(this.intervalMs);
        });
    }, delay);
    this.timer.unref();
  }

  /** One pass at `now`: overdue running jobs, then (at most once a minute) retention. */
  async tick(now: Date): Promise<TickResult> {
    const result: TickResult = { requeued: 0, failed: 0, timedOut: 0, deleted: 0 };
    await this.reapOverdue(now, result);
    if (now.getTime() - this.lastRetention >= this.retentionEveryMs) {
      this.lastRetention = now.getTime();
      result.deleted = await this.deleteOld(now);
    }
    return result;
  }

  private async reapOverdue(now: Date, result: TickResult): Promise<void> {
    const db = this.ctx.db;
    const log = this.ctx.logger;
    for (let round = 0; round < 10; round++) {
      const overdue = await jobFindOverdue(db, now, this.batchSize);
      if (overdue.length === 0) return;
      const actions: ReapAction[] = [];
      for (const job of overdue) {
        const d = reapDecision(job, now);
        if (!d) continue;
        actions.push({
          id: job.id,
          leaseToken: job.leaseToken,
          state: d.action === 'requeue' ? 'queued' : 'failed',
          runAt: d.action === 'requeue' ? d.runAt : null,
          error: d.error,
        });
      }
      const changed = await jobReap(db, actions, now);
      const byId = new Map(actions.map((a) => [a.id, a]));
      for (const job of changed) {
        const a = byId.get(job.id)!;
        const fields = { jobId: job.id, taskId: job.periodicTaskId ?? undefined, worker: job.worker, attempts: job.attempts };
        if (a.error.kind === 'timebox') {
          result.timedOut++;
          log.info({ ...fields, deadline: job.deadline }, 'job failed: past its deadline and grace without a report');
        } else if (a.state === 'queued') {
          result.requeued++;
          log.info(fields, 'job queued again: its lease expired');
        } else {
          result.failed++;
          log.info(fields, 'job failed: its lease expired and no attempts are left');
        }
      }
      // A batch that was not full, or that changed nothing, means there is nothing more to do now.
      if (overdue.length < this.batchSize || changed.length === 0) return;
    }
  }

  private async deleteOld(now: Date): Promise<number> {
    const before = new Date(now.getTime() - this.ctx.retentionMs);
    let total = 0;
    for (let i = 0; i < this.maxDeleteBatches; i++) {
      const n = await jobDeleteOld(this.ctx.db, before, this.batchSize);
      total += n;
      if (n < this.batchSize) break;
    }
    if (total > 0) this.ctx.logger.info({ deleted: total, before }, 'deleted final jobs older than the retention');
    return total;
  }
}
