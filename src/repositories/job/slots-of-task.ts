import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';

/** The slots in [from, to) of a task that already have a job. */
export async function jobSlotsOfTask(db: Executor, taskId: string, from: Date, to: Date): Promise<Date[]> {
  const { rows } = await sql<{ scheduled_at: Date }>`
    SELECT scheduled_at FROM job
     WHERE periodic_task_id = ${taskId} AND scheduled_at >= ${from} AND scheduled_at < ${to}`.execute(db.kysely);
  return rows.map((r) => r.scheduled_at);
}
