import { setTimeout as delay } from 'node:timers/promises';
import { jobSearchKeep, jobSearchUpkeep, jobSearchWork, SEAL_WAIT_MS } from '../repositories/jobs.js';
import type { ServiceContext } from '../services/context.js';
import { intervalLoop, type Loop, LoopService } from './loop.js';

export interface SearchIndexBuilderOptions {
  /** Time between steps (default 5 s). */
  intervalMs?: number;
  /** Ids per partition of job_search, at least (default: jobclock_search_upkeep's, 100,000; migration 0030). */
  searchPartitionWidth?: number;
  /** How long a seal waits for the transactions running at the seal to end before the copy (default 10 s; else a later step copies). */
  sealWaitMs?: number;
}

/** What one step did: partitions created ahead and dropped behind, sealed, rows copied, GIN indexes built. */
export interface SearchIndexStep {
  created: number;
  dropped: number;
  sealed: string[];
  copied: number;
  built: string[];
}

/**
 * Keeps job_search (migration 0030): its partitions ahead of the job ids (jobclock_search_upkeep,
 * every few seconds: partitions are 100,000 ids wide, which a busy system gives out in less than
 * the retention sweep's minute), and each partition that has filled sealed, its final jobs' search
 * rows copied in one statement and its GIN indexes (args, trigrams) built in bulk — work the
 * reports did row by row before, which was the larger part of what a finished job cost
 * PostgreSQL. Safe with any number of instances: one works on the partitions at a time.
 */
export class SearchIndexBuilder extends LoopService {
  protected readonly loop: Loop;
  private readonly width: number | undefined;
  private readonly sealWaitMs: number;

  constructor(
    readonly ctx: ServiceContext,
    options: SearchIndexBuilderOptions = {},
  ) {
    super();
    this.width = options.searchPartitionWidth;
    this.sealWaitMs = options.sealWaitMs ?? SEAL_WAIT_MS;
    this.loop = intervalLoop('search index build', ctx, options.intervalMs ?? 5_000, () => this.tick());
  }

  /** One step: the partitions kept, then every filled partition sealed, copied and indexed. */
  async tick(): Promise<SearchIndexStep> {
    const { created, dropped } = await jobSearchUpkeep(this.ctx.db, this.width);
    const step: SearchIndexStep = { created, dropped, sealed: [], copied: 0, built: [] };
    const work = (await jobSearchWork(this.ctx.db)).filter((p) => !p.copied || p.indexes.length < 2 || p.invalid.length > 0);
    if (work.length === 0) return step;
    const started = performance.now();
    const kept = await jobSearchKeep(this.ctx.db, work, { sleep: (ms) => delay(ms), maxMs: this.sealWaitMs });
    if (kept === 'busy') return step; // another instance is at it
    Object.assign(step, { sealed: kept.sealed, copied: kept.copied ?? 0, built: kept.built });
    if (kept.copied === null)
      this.ctx.logger.info({ partitions: kept.sealed }, 'job_search partitions sealed; their rows are copied once older transactions end');
    else if (kept.sealed.length > 0 || kept.copied > 0 || kept.built.length > 0)
      this.ctx.logger.info(
        { partitions: kept.sealed, copied: kept.copied, indexes: kept.built, ms: Math.round(performance.now() - started) },
        'job_search partitions filled: rows copied and search indexes built',
      );
    return step;
  }
}
