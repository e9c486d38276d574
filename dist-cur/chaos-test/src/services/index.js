import { FlowService } from './flow.js';
import { createJobPipelines } from './job-pipelines.js';
import { JobService } from './jobs.js';
import { Metrics } from './metrics.js';
import { PeriodicTaskService } from './periodic-tasks.js';
import { StatsService } from './stats.js';
import { TaskRunsService } from './task-runs.js';
import { WebhookService } from './webhooks.js';
import { WorkerProtocolService } from './worker-protocol.js';
/**
 * The services of one instance. What concurrent requests share lives here once and is handed to the
 * services that use it: the Metrics (also the loops'), and the JobPipelines — the group committers
 * of inserts and reports, the lease combiner, the long-poll waiters and their LISTEN subscription.
 * Call it once per instance.
 */
export function createServices(ctx) {
    ctx.metrics ??= new Metrics(ctx.db, ctx.clock);
    const pipelines = createJobPipelines(ctx);
    return {
        jobs: new JobService(ctx, pipelines),
        workers: new WorkerProtocolService(ctx, pipelines),
        tasks: new PeriodicTaskService(ctx),
        runs: new TaskRunsService(ctx),
        stats: new StatsService(ctx),
        flow: new FlowService(ctx),
        metrics: ctx.metrics,
        webhooks: new WebhookService(ctx),
    };
}
//# sourceMappingURL=index.js.map