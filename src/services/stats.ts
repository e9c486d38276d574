import { jobThroughput, type ThroughputBucket } from '../repositories/stats.js';
import type { ServiceContext } from './context.js';

/** Figures for operators that are not one job's: throughput per minute. */
export class StatsService {
  constructor(private readonly ctx: ServiceContext) {}

  /** Jobs finished and failed per minute over the last `minutes` minutes, the current one last. */
  throughput(minutes: number, type?: string): Promise<ThroughputBucket[]> {
    return jobThroughput(this.ctx.db, this.ctx.clock.now(), minutes, type);
  }
}
