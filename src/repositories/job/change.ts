import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { jobGet } from './get.js';
import { jobFromRow, type JobRow } from './row.js';

export type ChangeResult = { outcome: 'ok'; job: Job } | { outcome: 'not_found' } | { outcome: 'conflict'; job: Job };

export async function changeOrExplain(db: Executor, id: string, rows: JobRow[]): Promise<ChangeResult> {
  if (rows[0]) return { outcome: 'ok', job: jobFromRow(rows[0]) };
  const current = await jobGet(db, id);
  return current ? { outcome: 'conflict', job: current } : { outcome: 'not_found' };
}
