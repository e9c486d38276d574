import type { JobInsertRow } from '../../src/repositories/jobs.js';

/**
 * A job row as the repositories insert it (jobInsert, jobInsertMany): type `t` in the default group,
 * runnable at `runAt`, three attempts, no options; `over` sets the rest.
 */
export const jobRow = (runAt: Date, over: Partial<JobInsertRow> = {}): JobInsertRow => ({
  type: 't',
  group: 'default',
  args: null,
  subject: null,
  submitter: null,
  priority: 0,
  runAt,
  maxAttempts: 3,
  uniqueKey: null,
  timebox: null,
  traceparent: null,
  startBy: null,
  ...over,
});
