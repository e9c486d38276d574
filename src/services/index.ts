import { FlowService } from './flow.js';
import { JobService } from './jobs.js';
import { Metrics } from './metrics.js';
import { PeriodicTaskService } from './periodic-tasks.js';
import type { ServiceContext } from './context.js';
import { StatsService } from './stats.js';
import { TaskRunsService } from './task-runs.js';
import { WebhookService } from './webhooks.js';

export interface Services {
  jobs: JobService;
  tasks: PeriodicTaskService;
  runs: TaskRunsService;
  stats: StatsService;
  flow: FlowService;
  metrics: Metrics;
  webhooks: WebhookService;
}

/** The services of one instance. The context gets the instance's Metrics, which its loops share. */
export function createServices(ctx: ServiceContext): Services {
  ctx.metrics ??= new Metrics(ctx.db, ctx.clock);
  return {
    jobs: new JobService(ctx),
    tasks: new PeriodicTaskService(ctx),
    runs: new TaskRunsService(ctx),
    stats: new StatsService(ctx),
    flow: new FlowService(ctx),
    metrics: ctx.metrics,
    webhooks: new WebhookService(ctx),
  };
}
