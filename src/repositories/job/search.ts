import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { filtered, type JobSearchFilter } from './filter.js';
import { jobFromRow, type JobRow } from './row.js';

/** Newest first (id descending). Returns up to `limit` jobs. */
export async function jobSearch(db: Executor, f: JobSearchFilter): Promise<Job[]> {
  let q = filtered(db, f).selectAll();
  if (f.beforeId !== undefined) q = q.where(sql<boolean>`id < ${f.beforeId}::bigint`);
  const rows = (await q.orderBy('id', 'desc').limit(f.limit).execute()) as unknown as JobRow[];
  return rows.map(jobFromRow);
}
