import { reapDecision } from '../domain/job.js';
import { jobDropExpired, jobFindOverdue, jobReap, reaperWork } from '../repositories/jobs.js';
import { groupsDefaultReclaim } from '../repositories/flow-default.js';
import { intervalLoop, LoopService } from './loop.js';
/** How long a free permit of an undeclared group is kept: its released_at orders the group's next start. */
export const PERMIT_IDLE_MS = 60_000;
/**
 * Requeues or fails jobs whose lease expired, fails jobs past deadline + grace with a timebox
 * error, and drops queued jobs past their startBy that no lease met (the lease drops those it meets). Safe with any number of instances: every change is a compare-and-set on the lease token.
 */
export class LeaseReaper extends LoopService {
    ctx;
    loop;
    batchSize;
    constructor(ctx, options = {}) {
        super();
        this.ctx = ctx;
        this.batchSize = options.batchSize ?? 1_000;
        this.loop = intervalLoop('lease reaper tick', ctx, options.intervalMs ?? 1_000, () => this.tick(this.ctx.clock.now()));
    }
    /** One pass at `now` over the running jobs that are overdue. */
    async tick(now) {
        const result = { requeued: 0, failed: 0, timedOut: 0, expired: 0, reclaimed: 0 };
        const idleSince = new Date(now.getTime() - PERMIT_IDLE_MS);
        // one read says which of the three tasks has work: an idle tick makes no other statement
        const work = await reaperWork(this.ctx.db, now, idleSince);
        if (work.overdue)
            await this.reapOverdue(now, result);
        if (work.expired)
            await this.dropExpired(now, result);
        if (work.idlePermits)
            result.reclaimed = await groupsDefaultReclaim(this.ctx.db, idleSince, 10 * this.batchSize);
        if (result.reclaimed > 0)
            this.ctx.logger.debug({ count: result.reclaimed }, 'idle permits of undeclared groups deleted');
        return result;
    }
    /** The lease drops an expired job it meets; this tidies up those nobody tried to lease. */
    async dropExpired(now, result) {
        for (let round = 0; round < 10; round++) {
            const ids = await jobDropExpired(this.ctx.db, now, this.batchSize);
            result.expired += ids.length;
            if (ids.length > 0)
                this.ctx.logger.info({ jobIds: ids.slice(0, 100), count: ids.length }, 'jobs dropped: past their startBy, never leased');
            if (ids.length < this.batchSize)
                return;
        }
    }
    async reapOverdue(now, result) {
        const db = this.ctx.db;
        const log = this.ctx.logger;
        for (let round = 0; round < 10; round++) {
            const overdue = await jobFindOverdue(db, now, this.batchSize);
            if (overdue.length === 0)
                return;
            const actions = [];
            for (const job of overdue) {
                const d = reapDecision(job, now);
                if (!d)
                    continue;
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
                const a = byId.get(job.id);
                const fields = { jobId: job.id, taskId: job.periodicTaskId ?? undefined, worker: job.worker, attempts: job.attempts };
                if (a.state === 'failed' && job.periodicTaskId !== null)
                    this.ctx.metrics?.periodicSlots('failed');
                if (a.error.kind === 'timebox') {
                    result.timedOut++;
                    log.info({ ...fields, deadline: job.deadline }, 'job failed: past its deadline and grace without a report');
                }
                else if (a.state === 'queued') {
                    result.requeued++;
                    log.info(fields, 'job queued again: its lease expired');
                }
                else {
                    result.failed++;
                    log.info(fields, 'job failed: its lease expired and no attempts are left');
                }
            }
            // A batch that was not full, or that changed nothing, means there is nothing more to do now.
            if (overdue.length < this.batchSize || changed.length === 0)
                return;
        }
    }
}
//# sourceMappingURL=lease-reaper.js.map