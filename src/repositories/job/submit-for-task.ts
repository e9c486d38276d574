import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { Job } from '../../domain/job.js';
import { jobFromRow, type JobRow } from './row.js';

const isoOf = (d: Date | null): string | null => (d === null ? null : d.toISOString());

/** One job to submit for a task; type, group, args, priority, subject and submitter come from the task. */
export interface TaskSubmission {
  taskId: string;
  runAt: Date;
  /** The slot; null for a manual trigger (not a slot, so never a duplicate). */
  scheduledAt: Date | null;
  timebox: number;
  /** Policy allow: the drop check's interval and tolerance; else null. */
  runInterval: number | null;
  runTolerance: number | null;
}

/** Inserts one job for a task, reading its type, group, args and so on from the task row, and returns it whole (trigger). */
export async function jobSubmitForTask(db: Executor, item: TaskSubmission, now: Date): Promise<Job | null> {
  const { rows } = await sql<JobRow>`
    INSERT INTO job (type, group_, args, subject, submitter, priority, run_at, max_attempts,
                     periodic_task_id, scheduled_at, timebox, run_interval, run_tolerance,
                     created_at, updated_at)
    SELECT t.task, t.group_, t.args, t.subject, t.submitter, t.priority, ${item.runAt}, t.max_attempts,
           t.id, ${isoOf(item.scheduledAt)}::timestamptz, ${item.timebox}::bigint, ${item.runInterval}::bigint,
           ${item.runTolerance}::bigint, ${now}, ${now}
      FROM periodic_task t
     WHERE t.id = ${item.taskId}
    RETURNING *`.execute(db.kysely);
  return rows[0] ? jobFromRow(rows[0]) : null;
}
