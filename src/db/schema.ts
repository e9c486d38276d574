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
  max_attempts: Generated<number>;
  catch_up_window: number | null;
  end_at: NullableTimestamp;
  alert_after: number | null;
  last_success_at: NullableTimestamp;
  last_failure_at: NullableTimestamp;
  consecutive_failures: Generated<number>;
  overdue_at: NullableTimestamp;
  overdue_announced_at: NullableTimestamp;
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
  /** What the worker saved for the job's next attempt (migration 0023). */
  checkpoint: Json;
  start_by: NullableTimestamp;
  /** Someone waits for the job's end: a trigger notifies when it ends. */
  watched: Generated<boolean>;
  /** A debounced job's uniqueKey (migration 0024): held while it is queued and not yet leased. */
  debounce_key: string | null;
  /** First submission + debounceMax: the latest runAt a submission may move it to; cleared by the lease. */
  debounce_until: NullableTimestamp;
  /** The jobs it runs after; null for a job without dependencies (migration 0026). */
  after_ids: string[] | null;
  /** While waiting: how many of them have not ended. */
  deps_pending: number | null;
  /** onDependencyFailure "run". */
  dependency_failure_runs: Generated<boolean>;
  /** Some job runs after this one: a trigger looks at its end. */
  has_dependents: Generated<boolean>;
  /** Begun under the groups default concurrency: counted as running in its group (migration 0036). */
  group_default: Generated<boolean>;
}

/** The edges of the dependency graph, from a dependency to the job that runs after it (migration 0026). */
export interface JobDependencyTable {
  depends_on: string;
  job_id: string;
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

/** What happened to a job besides its current state (leases, outcomes, actions): its history. */
export interface JobEventTable {
  id: ColumnType<number, never, never>;
  job_id: number | string;
  at: Timestamp;
  kind: string;
  attempt: number | null;
  worker: string | null;
  actor: string | null;
  detail: Json;
}

/**
 * The search row of a final job (partitioned by id range; the partitions are made by
 * jobclock_search_upkeep()).
 */
export interface JobSearchTable {
  id: number | string;
  type: string;
  group_: string;
  worker: string | null;
  args: Json;
  text: string;
}

/** The id ranges of job_search that are sealed (migration 0030): their jobs' rows are written as they end; copied_at: the rows of those that had ended before were copied. */
export interface JobSearchSealedTable {
  lo: number | string;
  hi: number | string;
  sealed_at: Generated<Date>;
  copied_at: Date | null;
}

export type FlowKind = 'type' | 'group';

/** Pause, concurrency and rate of one job type or group. */
export interface FlowPolicyTable {
  kind: FlowKind;
  name: string;
  paused: Generated<boolean>;
  concurrency: number | null;
  rate_limit: number | null;
  rate_window_ms: number | null;
  updated_at: Timestamp;
}

/** The concurrency permits of a type or group: n = 1..concurrency, held by a running job. */
export interface FlowSlotTable {
  kind: FlowKind;
  name: string;
  n: number;
  job_id: number | string | null;
  released_at: NullableTimestamp;
}

/** The rate permits of a type or group: n = 1..rate_limit, each reusable rate_window_ms after use. */
export interface FlowTokenTable {
  kind: FlowKind;
  name: string;
  n: number;
  used_at: NullableTimestamp;
}

/** GET|PATCH /groups-default (migrations 0024, 0027): the policy of every group without one of its own. */
export interface FlowDefaultTable {
  kind: 'group';
  concurrency: number | null;
  rate_limit: number | null;
  rate_window_ms: number | null;
  updated_at: Timestamp;
}

/** A webhook subscription (migration 0022); `secret` as stored: plain or encrypted. */
export interface WebhookTable {
  id: ColumnType<number | string, never, never>;
  url: string;
  events: string[];
  filter_type: string | null;
  filter_group: string | null;
  filter_task: string | null;
  secret: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** An event to deliver to a webhook: the outbox row, with its attempts. */
export interface WebhookDeliveryTable {
  id: ColumnType<number | string, never, never>;
  webhook_id: number | string;
  event: string;
  subject: string;
  at: Timestamp;
  payload: Json;
  status: Generated<'pending' | 'delivered' | 'failed'>;
  attempts: Generated<number>;
  next_attempt_at: NullableTimestamp;
  /** A claimed attempt's hold (migration 0028): not due again before it ends. */
  held_until: NullableTimestamp;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Timestamp;
  delivered_at: NullableTimestamp;
}

/**
 * The outbox of webhook events (migration 0028): one row per event kind, moment and matching
 * subscriptions of one statement, turned into webhook_delivery rows when the engine claims them.
 */
export interface WebhookEventTable {
  id: ColumnType<number | string, never, never>;
  event: string;
  subjects: string[];
  webhook_ids: (number | string)[];
  at: Timestamp;
  payload: Json;
}

export interface KyselyMigrationTable {
  name: string;
  timestamp: string;
}

export interface KyselyMigrationLockTable {
  id: string;
  is_locked: Generated<number>;
}

/** The checksum of each applied migration file (db/migrate.ts refuses to start on a changed one). */
export interface JobclockMigrationChecksumTable {
  name: string;
  sha256: string;
  recorded_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** Every table jobclock queries (migrations/schema.sql has the whole schema). */
/** Defaults for new jobs of a type (PATCH /types/{type} defaults, migration 0023); durations in ms. */
export interface JobTypeDefaultsTable {
  type: string;
  max_attempts: number | null;
  timebox: number | null;
  lease: number | null;
  priority: number | null;
  start_within: number | null;
  updated_at: Timestamp;
}

/** A job type whose jobs jobclock POSTs to a URL itself (migration 0025); `secret` as stored. */
export interface PushTypeTable {
  type: string;
  url: string;
  secret: string;
  timeout_ms: number | string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface Database {
  periodic_task: PeriodicTaskTable;
  job: JobTable;
  periodic_slot: PeriodicSlotTable;
  webhook: WebhookTable;
  webhook_delivery: WebhookDeliveryTable;
  webhook_event: WebhookEventTable;
  job_event: JobEventTable;
  job_dependency: JobDependencyTable;
  job_search: JobSearchTable;
  job_search_sealed: JobSearchSealedTable;
  flow_policy: FlowPolicyTable;
  flow_slot: FlowSlotTable;
  flow_token: FlowTokenTable;
  flow_default: FlowDefaultTable;
  job_type_defaults: JobTypeDefaultsTable;
  push_type: PushTypeTable;
  kysely_migration: KyselyMigrationTable;
  kysely_migration_lock: KyselyMigrationLockTable;
  jobclock_migration_checksum: JobclockMigrationChecksumTable;
}
