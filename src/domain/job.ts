/**
 * Job states, documented by who moves a job out of each:
 * - queued:    POST /jobs/next leases it (-> running); cancel (-> cancelled); the lease-time drop
 *              check (-> dropped)
 * - running:   its worker reports finished/failed; the LeaseReaper requeues or fails it when the
 *              lease expires or the deadline passes; cancel (-> cancelled)
 * - finished, failed, dropped, cancelled: final; only POST /jobs/{id}/retry queues it again
 */
export const JOB_STATES = ['queued', 'running', 'finished', 'failed', 'dropped', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];

export const FINAL_STATES: readonly JobState[] = ['finished', 'failed', 'dropped', 'cancelled'];
export const OPEN_STATES: readonly JobState[] = ['queued', 'running'];

export const isFinal = (s: JobState): boolean => FINAL_STATES.includes(s);

/** A job as the API shows it. Timestamps are Dates here; the HTTP layer writes ISO strings. */
export interface Job {
  id: string;
  type: string;
  group: string;
  args: unknown;
  subject: string | null;
  submitter: string | null;
  priority: number;
  state: JobState;
  runAt: Date;
  attempts: number;
  maxAttempts: number;
  uniqueKey: string | null;
  periodicTaskId: string | null;
  scheduledAt: Date | null;
  timebox: number | null;
  worker: string | null;
  startedAt: Date | null;
  leaseExpiresAt: Date | null;
  deadline: Date | null;
  finishedAt: Date | null;
  progress: unknown;
  result: unknown;
  error: unknown;
  createdAt: Date;
  updatedAt: Date;
}

/** A job as handed to a worker by a lease. */
export interface LeasedJob extends Job {
  leaseToken: string;
  /** The periodic task's saved state, for a run that resumes where the last one stopped. */
  taskState: unknown;
}
