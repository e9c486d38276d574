/** The policy of every group without one of its own (GET|PATCH /groups-default, migration 0024). */
import { sql } from 'kysely';
import { CHANNELS } from '../db/notifications.js';
import type { Executor } from '../db/executor.js';

export interface GroupsDefault {
  concurrency: number | null;
  /** Groups nobody declared that have jobs running under the default now (the permits held). */
  groupsRunning: number;
  /** Permit rows that exist now, held or not yet reclaimed: made on a group's first lease, deleted once idle. */
  permits: number;
}

/** The default for undeclared groups and how many permits exist. */
export async function groupsDefaultGet(db: Executor): Promise<GroupsDefault> {
  const { rows } = await sql<{ concurrency: number | null; groups_running: number; permits: number }>`
    SELECT (SELECT d.concurrency FROM flow_default d WHERE d.kind = 'group') AS concurrency,
           (SELECT count(DISTINCT s.name) FROM flow_slot s WHERE s.kind = 'default-group' AND s.job_id IS NOT NULL)::int AS groups_running,
           (SELECT count(*) FROM flow_slot s WHERE s.kind = 'default-group')::int AS permits`.execute(db.kysely);
  const r = rows[0]!;
  return { concurrency: r.concurrency, groupsRunning: r.groups_running, permits: r.permits };
}

/**
 * Sets the default concurrency of undeclared groups (null: none) and wakes waiting workers. Permits
 * held above a lowered limit stay with their jobs until they end; the lease counts them.
 */
export async function groupsDefaultSet(db: Executor, concurrency: number | null, now: Date): Promise<void> {
  if (concurrency === null) await sql`DELETE FROM flow_default WHERE kind = 'group'`.execute(db.kysely);
  else
    await sql`
      INSERT INTO flow_default (kind, concurrency, updated_at) VALUES ('group', ${concurrency}::int, ${now})
      ON CONFLICT (kind) DO UPDATE SET concurrency = EXCLUDED.concurrency, updated_at = EXCLUDED.updated_at`.execute(db.kysely);
  await sql`SELECT pg_notify(${CHANNELS.jobs}, '')`.execute(db.kysely);
}

/**
 * Deletes up to `limit` permits of undeclared groups that nobody has held since `before` (the
 * margin keeps released_at for a next holder whose instance's clock is behind). Returns how many.
 */
export async function groupsDefaultReclaim(db: Executor, before: Date, limit: number): Promise<number> {
  const r = await sql`
    DELETE FROM flow_slot s
    WHERE (s.kind, s.name, s.n) IN (
      SELECT f.kind, f.name, f.n FROM flow_slot f
      WHERE f.kind = 'default-group' AND f.job_id IS NULL AND (f.released_at IS NULL OR f.released_at < ${before}::timestamptz)
      LIMIT ${limit}::int)
      AND s.job_id IS NULL`.execute(db.kysely);
  return Number(r.numAffectedRows ?? 0);
}
