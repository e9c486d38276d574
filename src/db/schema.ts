import type { ColumnType, Generated } from 'kysely';

/** Table types only. Durations are bigint milliseconds, returned as numbers (see database.ts). */
type Json = ColumnType<unknown, string | null | undefined, string | null>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

export type ConcurrencyPolicy = 'forbid' | 'allow' | 'replace';
export type MisfirePolicy = 'coalesce' | 'skip' | 'catch-up';
export type JobState = 'queued' | 'running' | 'finished' | 'failed' | 'dropped' | 'cancelled';

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
  max_attempts: Generated<number>;
  catch_up_window: number | null;
  end_at: NullableTimestamp;
  alert_after: number | null;
  last_success_at: NullableTimestamp;
  last_failure_at: NullableTimestamp;
  consecutive_failures: Generated<number>;
  overdue_at: NullableTimestamp;
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

/** The run ledger's records of slots that got no job, and of triggered jobs (migration 0021). */
export interface PeriodicSlotTable {
  task_id: string;
  slot: Timestamp;
  last_slot: Timestamp;
  slots: Generated<number>;
  outcome: 'skipped' | 'missed' | 'triggered';
  job_id: string | null;
  timer: string | null;
  timezone: string | null;
  anchor: NullableTimestamp;
  first_run_at: NullableTimestamp;
  recorded_at: Timestamp;
}

export interface KyselyMigrationTable {
  name: string;
  timestamp: string;
}

export interface Database {
  periodic_task: PeriodicTaskTable;
  job: JobTable;
  periodic_slot: PeriodicSlotTable;
  kysely_migration: KyselyMigrationTable;
}
