import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { SQLSTATE, sqlState } from '../../db/pg-errors.js';

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

/** A partition of job_search with work for the SearchIndexBuilder (migration 0030's jobclock_search_work). */
export interface SearchPartitionWork {
  name: string;
  lo: number;
  hi: number;
  /** The triggers write the rows of its jobs as they end. */
  sealed: boolean;
  /** The rows of the jobs that had ended before were copied in bulk. */
  copied: boolean;
  /** The names of its GIN indexes that exist (valid or not). */
  indexes: string[];
  /** Those of them whose concurrent build was cut short: dropped and built again. */
  invalid: string[];
}

/** The partitions to seal, copy or index (migration 0030), newest first. */
export async function jobSearchWork(db: Executor): Promise<SearchPartitionWork[]> {
  const { rows } = await sql<SearchPartitionWork & { lo: string; hi: string }>`
    SELECT name, lo, hi, sealed, copied, indexes, invalid FROM jobclock_search_work()`.execute(db.kysely);
  return rows.map((r) => ({ ...r, lo: Number(r.lo), hi: Number(r.hi) }));
}

/** The id ranges whose final jobs have their search rows in job_search, lowest first (migration 0030). */
export async function jobSearchCopiedRanges(db: Executor): Promise<{ lo: string; hi: string }[]> {
  const { rows } = await sql<{ lo: string; hi: string }>`
    SELECT lo::text, hi::text FROM job_search_sealed WHERE copied_at IS NOT NULL ORDER BY lo`.execute(db.kysely);
  return rows;
}

/**
 * The GIN indexes a partition of job_search gets once its rows are copied (migration 0030): args by
 * JSON path, and the text's trigrams when pg_trgm is installed. Their pending lists take the rows of
 * jobs that end afterwards, merged by the SearchIndexFlusher or the reports that overflow them (0020).
 */
export function searchGinIndexes(partition: string, trgm: boolean): { name: string; using: string }[] {
  const gins = [{ name: `${partition}_args_gin`, using: 'gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512)' }];
  if (trgm) gins.push({ name: `${partition}_text_gin`, using: 'gin (text gin_trgm_ops)' });
  return gins;
}

/** What jobSearchKeep did, or `busy` when another instance is at it. */
export type SearchPartitionsKept = { sealed: string[]; copied: number | null; built: string[] } | 'busy';

/** How long a seal waits by default for the transactions that began before it, before leaving the copy for a later step. */
export const SEAL_WAIT_MS = 10_000;

/**
 * Does what the partitions of job_search need (migration 0030; `parts` from jobSearchWork), on one
 * connection, one instance at a time (a session advisory lock; the others find it busy):
 * 1. seals those that filled: from then on the triggers write the rows of their jobs as they end;
 * 2. waits until every client transaction that was running at the seal has ended (a statement of
 *    theirs may have ended a job of the range without seeing the seal), then copies the rows of
 *    each sealed range's final jobs in one statement (`copied`: how many; null when those
 *    transactions were still running after `wait.maxMs`: a later step copies, and builds);
 * 3. builds the GINs the copied ones lack with CREATE INDEX CONCURRENTLY (reports keep writing
 *    them, searches keep reading them); an index left invalid by a build cut short is dropped and
 *    built again.
 */
export async function jobSearchKeep(
  db: Executor,
  parts: readonly SearchPartitionWork[],
  wait: { sleep: (ms: number) => Promise<void>; maxMs: number },
): Promise<SearchPartitionsKept> {
  return db.kysely.connection().execute(async (c) => {
    const { rows } = await sql<{ got: boolean }>`SELECT pg_try_advisory_lock(hashtext('jobclock_search_build')) AS got`.execute(c);
    if (!rows[0]!.got) return 'busy';
    try {
      const toSeal = parts.filter((p) => !p.sealed);
      const sealed =
        toSeal.length === 0
          ? []
          : (
              await sql<{ lo: string }>`
                INSERT INTO job_search_sealed (lo, hi)
                  SELECT * FROM unnest(${toSeal.map((p) => p.lo)}::bigint[], ${toSeal.map((p) => p.hi)}::bigint[])
                ON CONFLICT (lo) DO NOTHING RETURNING lo::text`.execute(c)
            ).rows.map((r) => toSeal.find((p) => String(p.lo) === r.lo)!.name);
      let copied = 0;
      const toCopy = parts.filter((p) => !p.copied);
      if (toCopy.length > 0) {
        if (!(await olderTransactionsEnded(c, wait.sleep, wait.maxMs))) return { sealed, copied: null, built: [] };
        for (const p of toCopy) copied += await copyRows(c, p.lo);
      }
      const trgm = await sql<{ ok: boolean }>`SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') AS ok`.execute(c);
      const built: string[] = [];
      for (const part of parts) {
        for (const { name, using } of searchGinIndexes(part.name, trgm.rows[0]!.ok)) {
          if (part.invalid.includes(name)) await sql.raw(`DROP INDEX CONCURRENTLY IF EXISTS "${name}"`).execute(c);
          else if (part.indexes.includes(name)) continue;
          try {
            await sql.raw(`CREATE INDEX CONCURRENTLY IF NOT EXISTS "${name}" ON "${part.name}" USING ${using}`).execute(c);
          } catch (err) {
            // the partition was dropped meanwhile (retention emptied it): nothing to index
            if (sqlState(err) === SQLSTATE.undefinedTable) continue;
            throw err;
          }
          built.push(name);
        }
      }
      return { sealed, copied, built };
    } finally {
      await sql`SELECT pg_advisory_unlock(hashtext('jobclock_search_build'))`.execute(c);
    }
  });
}

/** Waits (up to maxMs) until the client transactions running now have ended; whether they have. */
async function olderTransactionsEnded(c: Executor['kysely'], sleep: (ms: number) => Promise<void>, maxMs: number): Promise<boolean> {
  const { rows } = await sql<{ vxids: string[] }>`
    SELECT coalesce(array_agg(l.virtualxid), '{}') AS vxids
      FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
     WHERE l.locktype = 'virtualxid' AND l.granted AND l.pid <> pg_backend_pid() AND a.backend_type = 'client backend'`.execute(c);
  const vxids = rows[0]!.vxids;
  for (let waited = 0; vxids.length > 0; waited += 20) {
    const left = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'virtualxid' AND granted AND virtualxid = ANY (${vxids}::text[])`.execute(c);
    if (left.rows[0]!.n === 0) return true;
    if (waited >= maxMs) return false;
    await sleep(20);
  }
  return true;
}

/** Copies the search rows of a sealed range's final jobs, once (the range marked copied in the same statement); how many. */
async function copyRows(c: Executor['kysely'], lo: number): Promise<number> {
  const r = await sql`
    WITH claimed AS (
      UPDATE job_search_sealed SET copied_at = now() WHERE lo = ${lo} AND copied_at IS NULL RETURNING lo, hi)
    INSERT INTO job_search (id, type, group_, worker, args, text)
      SELECT j.id, j.type, j.group_, j.worker, j.args, jobclock_search_text(j.args, j.subject, j.error)
        FROM claimed k JOIN job j ON j.id >= k.lo AND j.id < k.hi
       WHERE j.state IN ('finished', 'failed', 'dropped', 'cancelled')
    ON CONFLICT (id) DO NOTHING`.execute(c);
  return Number(r.numAffectedRows ?? 0);
}
