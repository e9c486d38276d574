import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { compiledOnce } from './compile.js';
import { jobCols, jobFromRow, type JobRow } from './row.js';
import { OPEN } from './sql.js';

/** The open (queued or running) jobs holding these unique keys, by key. */
export async function jobFindOpenByUniqueKeys(db: Executor, keys: readonly string[]): Promise<Map<string, Job>> {
  if (keys.length === 0) return new Map();
  const rows = await compiledOnce(
    db,
    'open-by-unique-keys',
    { keys: [...new Set(keys)] },
    (v) => sql<JobRow>`
    SELECT ${jobCols('job')} FROM job WHERE unique_key = ANY(${v.keys}::text[]) AND state IN ${OPEN}`,
  );
  return new Map(rows.map((r) => [r.unique_key!, jobFromRow(r)]));
}
