import type { JobEvent } from '../../domain/job-history.js';
import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { isJobId } from './row.js';

/** A stored entry of a job's history (see migration 0005 for what is stored and what is read from the row). */
export type JobEventRow = JobEvent;

/** The stored history of a job, oldest first. */
export async function jobEventRows(db: Executor, id: string): Promise<JobEventRow[]> {
  if (!isJobId(id)) return [];
  const { rows } = await sql<JobEventRow>`
    SELECT at, kind, attempt, worker, actor, detail FROM job_event WHERE job_id = ${id}::bigint ORDER BY id`.execute(db.kysely);
  return rows;
}
