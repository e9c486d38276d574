/** The policy of every group without one of its own (GET|PATCH /groups-default, migrations 0024, 0027). */
import { type RawBuilder, sql } from 'kysely';
import { CHANNELS } from '../db/notifications.js';
import type { Executor } from '../db/executor.js';

export interface DefaultRate {
  limit: number;
  windowMs: number;
}

export interface GroupsDefault {
  concurrency: number | null;
  /** At most `limit` leases of each undeclared group begin in any window of `windowMs`; null: no rate. */
  rate: DefaultRate | null;
  /** Groups nobody declared that have jobs running under the default now. */
  groupsRunning: number;
  /** The places taken under the default concurrency now: jobs running under it, in all groups. */
  permits: number;
  /** Rate token rows that exist now: made on a group's first lease under the rate, deleted once out of every window. */
  tokens: number;
}

/** Changes to the default; undefined leaves a field as it is, null removes it. */
export interface GroupsDefaultPatch {
  concurrency?: number | null | undefined;
  rate?: DefaultRate | null | undefined;
}

/**
 * A job (alias `j`) running under the groups default: job_default_running_idx's condition (migration
 * 0037), written so that no other index's predicate follows from it (see there).
 */
export const RUNNING_UNDER_DEFAULT = sql`j.group_default AND coalesce(j.state = 'running', false)`;

/** The default for undeclared groups and how many permits exist. */
export async function groupsDefaultGet(db: Executor): Promise<GroupsDefault> {
  const { rows } = await sql<{
    concurrency: number | null;
    rate_limit: number | null;
    rate_window_ms: string | null;
    groups_running: number;
    permits: number;
    tokens: number;
  }>`
    SELECT d.concurrency, d.rate_limit, d.rate_window_ms,
           r.groups_running, r.permits,
           (SELECT count(*) FROM flow_token t WHERE t.kind = 'default-group')::int AS tokens
    FROM (SELECT 1) one LEFT JOIN flow_default d ON d.kind = 'group',
         -- the places taken: the jobs running under the default (migration 0036), by group
         (SELECT count(DISTINCT j.group_)::int AS groups_running, count(*)::int AS permits
            FROM job j WHERE ${RUNNING_UNDER_DEFAULT}) r`.execute(db.kysely);
  const r = rows[0]!;
  return {
    concurrency: r.concurrency,
    rate: r.rate_limit === null || r.rate_window_ms === null ? null : { limit: r.rate_limit, windowMs: Number(r.rate_window_ms) },
    groupsRunning: r.groups_running,
    permits: r.permits,
    tokens: r.tokens,
  };
}

/**
 * Changes the default of undeclared groups (null removes a limit; a default left with nothing set
 * is deleted) and wakes waiting workers. Permits held above a lowered limit stay with their jobs
 * until they end; the lease counts them. Run it in a transaction.
 */
export async function groupsDefaultSet(db: Executor, patch: GroupsDefaultPatch, now: Date): Promise<void> {
  const setRate = patch.rate !== undefined;
  await sql`
    INSERT INTO flow_default AS d (kind, concurrency, rate_limit, rate_window_ms, updated_at)
    VALUES ('group', ${patch.concurrency ?? null}::int, ${patch.rate?.limit ?? null}::int, ${patch.rate?.windowMs ?? null}::bigint, ${now})
    ON CONFLICT (kind) DO UPDATE SET
      concurrency = ${patch.concurrency === undefined ? sql`d.concurrency` : sql`EXCLUDED.concurrency`},
      rate_limit = ${setRate ? sql`EXCLUDED.rate_limit` : sql`d.rate_limit`},
      rate_window_ms = ${setRate ? sql`EXCLUDED.rate_window_ms` : sql`d.rate_window_ms`},
      updated_at = EXCLUDED.updated_at`.execute(db.kysely);
  await sql`DELETE FROM flow_default WHERE kind = 'group' AND concurrency IS NULL AND rate_limit IS NULL`.execute(db.kysely);
  await sql`SELECT pg_notify(${CHANNELS.jobs}, '')`.execute(db.kysely);
}

/** A free permit (`f`, of flow_slot) of an undeclared group that nobody has held since `before`. */
const idlePermit = (before: Date) =>
  sql`f.kind = 'default-group' AND f.job_id IS NULL AND (f.released_at IS NULL OR f.released_at < ${before}::timestamptz)`;
/** Rate tokens of undeclared groups last used before this are out of every window (with the margin). */
const tokenHorizon = (before: Date) =>
  sql`${before}::timestamptz - coalesce((SELECT d.rate_window_ms FROM flow_default d WHERE d.kind = 'group'), 0) * interval '1 millisecond'`;
/** A rate token (`f`, of flow_token) of an undeclared group last used before `horizon`, or never. */
const idleToken = (horizon: RawBuilder<unknown>) => sql`f.kind = 'default-group' AND (f.used_at IS NULL OR f.used_at < ${horizon})`;

/** Whether `groupsDefaultReclaim(db, before, …)` has anything to delete (an SQL boolean). */
export const idlePermitsExist = (before: Date) => sql<boolean>`(
  EXISTS (SELECT 1 FROM flow_slot f WHERE ${idlePermit(before)})
  OR EXISTS (SELECT 1 FROM flow_token f WHERE ${idleToken(tokenHorizon(before))}))`;

/**
 * Deletes up to `limit` permits of undeclared groups that nobody has held since `before` (the
 * margin keeps released_at for a next holder whose instance's clock is behind), and up to `limit`
 * rate tokens last used before `before` minus the default rate's window (none: before `before`):
 * out of every window, with the same margin. Returns how many rows went.
 */
export async function groupsDefaultReclaim(db: Executor, before: Date, limit: number): Promise<number> {
  const slots = await sql`
    DELETE FROM flow_slot s
    WHERE (s.kind, s.name, s.n) IN (
      SELECT f.kind, f.name, f.n FROM flow_slot f
      WHERE ${idlePermit(before)}
      LIMIT ${limit}::int
      FOR UPDATE SKIP LOCKED)
      AND s.job_id IS NULL`.execute(db.kysely);
  // rows a lease holds are skipped, never waited for (a lease locks them in its own order); a lease
  // that took a token meanwhile moved its used_at, and the condition, re-checked on the newest
  // version of the row, keeps it
  const tokens = await sql`
    WITH horizon AS MATERIALIZED (SELECT ${tokenHorizon(before)} AS at)
    DELETE FROM flow_token t
    WHERE (t.kind, t.name, t.n) IN (
      SELECT f.kind, f.name, f.n FROM flow_token f
      WHERE ${idleToken(sql`(SELECT h.at FROM horizon h)`)}
      LIMIT ${limit}::int
      FOR UPDATE SKIP LOCKED)
      AND (t.used_at IS NULL OR t.used_at < (SELECT h.at FROM horizon h))`.execute(db.kysely);
  return Number(slots.numAffectedRows ?? 0) + Number(tokens.numAffectedRows ?? 0);
}
