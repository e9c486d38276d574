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
 * Seals every range partition of job_search now, as copied, and gives each its GIN indexes, as the
 * SearchIndexBuilder does once a partition has filled (migration 0030), under the same names: from
 * then on the triggers write the rows of the jobs that end. For tests of what happens to those rows.
 */
export async function sealSearchPartitions(pool: pg.Pool): Promise<void> {
  await pool.query(
    `WITH sealed AS (
       INSERT INTO job_search_sealed (lo, hi, copied_at) SELECT lo, hi, now() FROM jobclock_search_ranges()
       ON CONFLICT (lo) DO NOTHING RETURNING lo, hi)
     INSERT INTO job_search (id, type, group_, worker, args, text)
       SELECT j.id, j.type, j.group_, j.worker, j.args, jobclock_search_text(j.args, j.subject, j.error)
         FROM sealed s JOIN job j ON j.id >= s.lo AND j.id < s.hi
        WHERE j.state IN ('finished', 'failed', 'dropped', 'cancelled')
     ON CONFLICT (id) DO NOTHING`,
  );
  for (const { name } of await searchPartitions(pool)) {
    await pool.query(
      `CREATE INDEX IF NOT EXISTS ${name}_args_gin ON ${name} USING gin (args jsonb_path_ops) WITH (gin_pending_list_limit = 512)`,
    );
    await pool.query(`CREATE INDEX IF NOT EXISTS ${name}_text_gin ON ${name} USING gin (text gin_trgm_ops)`);
  }
}
