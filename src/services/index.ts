import { JobService } from './jobs.js';
import { PeriodicTaskService } from './periodic-tasks.js';
import type { ServiceContext } from './context.js';

export interface Services {
  jobs: JobService;
  tasks: PeriodicTaskService;
}

export function createServices(ctx: ServiceContext): Services {
  return { jobs: new JobService(ctx), tasks: new PeriodicTaskService(ctx) };
}
