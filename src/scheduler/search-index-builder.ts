import { SQLSTATE, sqlState } from '../db/pg-errors.js';
import { jobSearchBuildIndexes, jobSearchFilled, jobSearchUpkeep } from '../repositories/jobs.js';
import type { ServiceContext } from '../services/context.js';
import { intervalLoop, type Loop, LoopService } from './loop.js';

export interface SearchIndexBuilderOptions {
  /** Time between steps (default 5 s). */
  intervalMs?: number;
  /** Ids per partition of job_search, at least (default: jobclock_search_upkeep's, 100,000; migration 0030). */
  searchPartitionWidth?: number;
}

/** What one step did: partitions created ahead and dropped behind, and the GIN indexes built. */
export interface SearchIndexStep {
  created: number;
  dropped: number;
  built: string[];
}

/**
 * Keeps job_search's partitions ahead of the job ids (jobclock_search_upkeep, every few seconds:
 * partitions are 100,000 ids wide, which a busy system gives out in less than the retention sweep's
 * minute) and builds the GIN indexes (args, trigrams) of each partition that has filled, in bulk
 * (migration 0030): a report writes its jobs' search rows without them, which took most of its WAL
 * and a large share of its time. Safe with any number of instances: one builds at a time.
 */
export class SearchIndexBuilder extends LoopService {
  protected readonly loop: Loop;
  private readonly width: number | undefined;

  constructor(
    readonly ctx: ServiceContext,
    options: SearchIndexBuilderOptions = {},
  ) {
    super();
    this.width = options.searchPartitionWidth;
    this.loop = intervalLoop('search index build', ctx, options.intervalMs ?? 5_000, () => this.tick());
  }

  /** One step: the partitions kept, then the indexes of every filled partition that lacks them built. */
  async tick(): Promise<SearchIndexStep> {
    const { created, dropped } = await jobSearchUpkeep(this.ctx.db, this.width);
    const built: string[] = [];
    for (const part of await jobSearchFilled(this.ctx.db)) {
      if (part.indexes.length === 2 && part.invalid.length === 0) continue;
      const started = performance.now();
      let result;
      try {
        result = await jobSearchBuildIndexes(this.ctx.db, part);
      } catch (err) {
        // the partition was dropped meanwhile (retention emptied it): nothing to index
        if (sqlState(err) === SQLSTATE.undefinedTable) continue;
        throw err;
      }
      if (result === 'busy') break; // another instance is building: it takes the rest too
      if (result.built.length === 0) continue;
      built.push(...result.built);
      this.ctx.logger.info(
        { partition: part.name, lo: part.lo, hi: part.hi, indexes: result.built, ms: Math.round(performance.now() - started) },
        'built the search indexes of a filled job_search partition',
      );
    }
    return { created, dropped, built };
  }
}
