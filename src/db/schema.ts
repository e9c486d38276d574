import type { ColumnType, Generated } from 'kysely';
import type { JobState } from '../domain/job.js';
import type { ConcurrencyPolicy, MisfirePolicy } from '../domain/periodic-task.js';

/** Table types only. Durations are bigint milliseconds, returned as numbers (see database.ts). */
type Json = ColumnType<unknown, string | null | undefined, string | null>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export interface PeriodicTaskTable {
  id: string;
  enabled: Generated<boolean>;
  task: string;
  group_: Generated<string>;
  args: Json;
  subject: string | null;
  submitter: string | null;
  priority: Generated<number>;
  owner: string | null;
  timer: string;
  timezone: Generated<string>;
  first_run_at: NullableTimestamp;
  tolerance: number | null;
  timebox: number | null;
  concurrency_policy: Generated<ConcurrencyPolicy>;
  misfire_policy: Generated<MisfirePolicy>;
  catch_up_limit: Generated<number>;
  worker: string | null;
  marked: NullableTimestamp;
  nextrun: NullableTimestamp;
  last_run: NullableTimestamp;
  state: Json;
  created: ColumnType<Date, Date | string | undefined, Date | string>;
  updated: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface JobTable {
  id: ColumnType<string, never, never>;
  type: string;
  group_: Generated<string>;
  args: Json;
  subject: string | null;
  submitter: string | null;
  priority: Generated<number>;
  state: Generated<JobState>;
  run_at: Timestamp;
  attempts: Generated<number>;
  max_attempts: Generated<number>;
  unique_key: string | null;
  periodic_task_id: string | null;
  scheduled_at: NullableTimestamp;
  timebox: number | null;
  run_interval: number | null;
  run_tolerance: number | null;
  worker: string | null;
  lease_token: string | null;
  lease_expires_at: NullableTimestamp;
  lease_duration: number | null;
  started_at: NullableTimestamp;
  deadline: NullableTimestamp;
  finished_at: NullableTimestamp;
  progress: Json;
  result: Json;
  error: Json;
  created_at: ColumnType<Date, Date | string | undefined, Date | string>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  traceparent: string | null;
  holds_slot: Generated<boolean>;
}

export interface KyselyMigrationTable {
  name: string;
  timestamp: string;
}

export interface Database {
  periodic_task: PeriodicTaskTable;
  job: JobTable;
  kysely_migration: KyselyMigrationTable;
}
