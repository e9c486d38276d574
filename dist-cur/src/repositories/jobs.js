/**
 * All SQL on the `job` table (and the few `periodic_task` columns that leasing and reports touch:
 * last_run and state): one statement per file under job/, exported from here.
 */
export * from './job/index.js';
//# sourceMappingURL=jobs.js.map