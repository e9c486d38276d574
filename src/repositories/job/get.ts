import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { isJobId, jobCols, jobFromRow, type JobRow } from './row.js';

export async function jobGet(db: Executor, id: string): Promise<Job | null> {
  if (!isJobId(id)) return null;
  const rows = await compiledOnce(db, 'get', { id }, (v) => sql<JobRow>`SELECT ${jobCols('job')} FROM job WHERE id = ${v.id}::bigint`);
  return rows[0] ? jobFromRow(rows[0]) : null;
}
