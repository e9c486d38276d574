/**
 * The statements on the `job` table, one per file (after graphile-worker's src/sql/*): each file
 * holds one statement with its parameter and result types. Shared here: the row type and its
 * mapping (row.ts), the compiler that runs the hot ones as prepared statements (compile.ts) and SQL
 * fragments (sql.ts). Every function takes the Executor port; `now` is always a parameter.
 */
export * from './cancel-matching.js';
export * from './cancel.js';
export * from './debounce.js';
export * from './delete-old.js';
export * from './dependencies.js';
export * from './drop-expired.js';
export * from './earliest-future-run-at.js';
export * from './events.js';
export { likePattern } from './filter.js';
export * from './find-open-by-unique-keys.js';
export * from './find-recent-by-unique-keys.js';
export * from './find-overdue.js';
export * from './get.js';
export * from './heartbeat.js';
export * from './insert-many.js';
export { jobInsert } from './insert.js';
export * from './lease.js';
export * from './lease-slim.js';
export * from './patch.js';
export * from './reap.js';
export * from './reaper-work.js';
export * from './release-leases.js';
export * from './report.js';
export * from './retry-matching.js';
export * from './retry.js';
export { isJobId, JOB_COLUMNS, jobFromRow } from './row.js';
export * from './search-partitions.js';
export * from './search.js';
export * from './open-of-task.js';
export * from './cancel-open-of-tasks.js';
export * from './submit-for-task.js';
export * from './slots-of-task.js';
export * from './submit-slots.js';
export * from './table-size.js';
export * from './watch.js';
//# sourceMappingURL=index.js.map