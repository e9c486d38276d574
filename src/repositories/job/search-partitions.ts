import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';

/** job_search's partitions (migration 0018): the ones it created ahead of the job ids, and dropped behind them. */
export interface SearchPartitionsUpkeep {
  created: number;
  dropped: number;
}

/**
 * Creates job_search's partitions ahead of the job id sequence and drops those whose id range has
 * no job left (migration 0018's jobclock_search_upkeep). `minWidth`: ids per partition, at least;
 * without it, the function's own default (a million).
 */
export async function jobSearchUpkeep(db: Executor, minWidth?: number): Promise<SearchPartitionsUpkeep> {
  const call = minWidth === undefined ? sql`jobclock_search_upkeep()` : sql`jobclock_search_upkeep(${minWidth}::bigint)`;
  const { rows } = await sql<SearchPartitionsUpkeep>`SELECT created, dropped FROM ${call}`.execute(db.kysely);
  return rows[0]!;
}

/**
 * Merges the pending lists of the GIN indexes of every job_search partition (migration 0020's
 * jobclock_search_flush): the pending pages merged, 0 when another instance is at it.
 */
export async function jobSearchFlush(db: Executor): Promise<number> {
  const { rows } = await sql<{ pages: number }>`SELECT jobclock_search_flush() AS pages`.execute(db.kysely);
  return rows[0]!.pages;
}
