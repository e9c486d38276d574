import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import { replacedEvents, replacedSet } from './replaced.js';

/** Cancels the queued and running jobs of the given tasks (policy replace). */
export async function jobCancelOpenOfTasks(
  db: Executor,
  taskIds: readonly string[],
  now: Date,
): Promise<{ id: string; periodicTaskId: string }[]> {
  if (taskIds.length === 0) return [];
  const { rows } = await sql<{ id: number; periodic_task_id: string }>`
    WITH cancelled AS (
      UPDATE job
         SET ${replacedSet(now)}
       WHERE periodic_task_id = ANY(${taskIds}::text[]) AND state IN ('queued', 'running')
      RETURNING id, periodic_task_id, lease_token, attempts, worker, error
    ),
    events AS (${replacedEvents('cancelled', now)})
    SELECT id, periodic_task_id FROM cancelled`.execute(db.kysely);
  return rows.map((r) => ({ id: String(r.id), periodicTaskId: r.periodic_task_id }));
}
