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

/** A partition of job_search that has filled, with the GIN indexes it has (migration 0030's jobclock_search_filled). */
export interface FilledSearchPartition {
  name: string;
  lo: number;
  hi: number;
  /** The names of its GIN indexes that exist (valid or not). */
  indexes: string[];
  /** Those of them whose concurrent build was cut short: dropped and built again. */
  invalid: string[];
}

/** The partitions that should have their GIN indexes (migration 0030), newest first. */
export async function jobSearchFilled(db: Executor): Promise<FilledSearchPartition[]> {
  const { rows } = await sql<FilledSearchPartition & { lo: string; hi: string }>`
    SELECT name, lo, hi, indexes, invalid FROM jobclock_search_filled()`.execute(db.kysely);
  return rows.map((r) => ({ ...r, lo: Number(r.lo), hi: Number(r.hi) }));
}

/**
 * The GIN indexes a filled partition of job_search gets (migration 0030): args by JSON path, and
 * the text's trigrams when pg_trgm is installed. Their pending lists take the rows of jobs that end
 * after the build, merged by the SearchIndexFlusher or the reports that overflow them (0020).
 */
export function searchGinIndexes(partition: string, trgm: boolean): { name: string; using: string }[] {
  const gins = [{ name: `${partition}_args_gin`, using: 'gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512)' }];
  if (trgm) gins.push({ name: `${partition}_text_gin`, using: 'gin (text gin_trgm_ops) WITH (gin_pending_list_limit = 512)' });
  return gins;
}

/** What jobSearchBuildIndexes did: the indexes built, or `busy` when another instance is building. */
export type SearchIndexBuild = { built: string[] } | 'busy';

/**
 * Builds the GIN indexes a filled partition of job_search lacks (`<partition>_args_gin`, and
 * `<partition>_text_gin` when pg_trgm is installed), each with CREATE INDEX CONCURRENTLY: reports
 * keep writing the partition and searches keep reading it meanwhile. One instance builds at a time
 * (a session advisory lock on the one connection it builds on; the others find it busy). An index
 * left invalid by a build cut short is dropped and built again.
 */
export async function jobSearchBuildIndexes(db: Executor, part: FilledSearchPartition): Promise<SearchIndexBuild> {
  return db.kysely.connection().execute(async (c) => {
    const { rows } = await sql<{ got: boolean }>`SELECT pg_try_advisory_lock(hashtext('jobclock_search_build')) AS got`.execute(c);
    if (!rows[0]!.got) return 'busy';
    try {
      const trgm = await sql<{ ok: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') AS ok`.execute(c);
      const built: string[] = [];
      for (const { name, using } of searchGinIndexes(part.name, trgm.rows[0]!.ok)) {
        if (part.invalid.includes(name)) await sql.raw(`DROP INDEX CONCURRENTLY IF EXISTS "${name}"`).execute(c);
        else if (part.indexes.includes(name)) continue;
        await sql.raw(`CREATE INDEX CONCURRENTLY IF NOT EXISTS "${name}" ON "${part.name}" USING ${using}`).execute(c);
        built.push(name);
      }
      return { built };
    } finally {
      await sql`SELECT pg_advisory_unlock(hashtext('jobclock_search_build'))`.execute(c);
    }
  });
}
