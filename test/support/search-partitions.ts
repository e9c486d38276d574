import type pg from 'pg';

/** job_search's range partitions (migration 0018), lowest first. */
export const searchPartitions = async (pool: pg.Pool) =>
  (await pool.query<{ name: string; lo: string; hi: string }>('SELECT name, lo::text, hi::text FROM jobclock_search_ranges()')).rows.map(
    (r) => ({ name: r.name, lo: Number(r.lo), hi: Number(r.hi) }),
  );

/**
 * Partitions job_search `width` ids apiece on a database with no final jobs yet (a test's fresh
 * one), so that a few thousand jobs spread over many partitions: the migration's partitions, a
 * million ids each, are dropped (empty) and the upkeep makes new ones.
 */
export async function repartition(pool: pg.Pool, width: number): Promise<void> {
  for (const { name } of await searchPartitions(pool)) await pool.query(`DROP TABLE ${name}`);
  await pool.query('SELECT jobclock_search_upkeep($1)', [width]);
}

/**
 * Seals one range over every id (migration 0030): the triggers write each final job's search row as
 * it ends, as they did for every job before (a slice of ids is sealed once the ids have passed it;
 * before that its jobs have no row: see test/scheduler/search-row-copier.test.ts). For tests of the
 * rows and the partitions that hold them.
 */
export async function sealAll(pool: pg.Pool): Promise<void> {
  // from where the sealed ranges end (they never overlap), to the last id there can be
  await pool.query(
    `INSERT INTO job_search_sealed (lo, hi, copied_at)
     SELECT coalesce(max(hi), 0), 9223372036854775807, now() FROM job_search_sealed HAVING coalesce(max(hi), 0) < 9223372036854775807`,
  );
}
