import { sql } from 'kysely';
import type { Executor } from '../db/executor.js';

/** A job type's defaults (durations in ms); a field left out is not defaulted. */
export interface TypeDefaults {
  maxAttempts?: number | undefined;
  timebox?: number | undefined;
  lease?: number | undefined;
  priority?: number | undefined;
  startWithin?: number | undefined;
}

interface Row {
  type: string;
  max_attempts: number | null;
  timebox: string | number | null;
  lease: string | number | null;
  priority: number | null;
  start_within: string | number | null;
}

const num = (v: string | number | null) => (v === null ? undefined : Number(v));
const fromRow = (r: Row): TypeDefaults =>
  Object.fromEntries(
    Object.entries({
      maxAttempts: r.max_attempts ?? undefined,
      timebox: num(r.timebox),
      lease: num(r.lease),
      priority: r.priority ?? undefined,
      startWithin: num(r.start_within),
    }).filter(([, v]) => v !== undefined),
  );

/** The defaults of these types, by type (types without defaults are absent). */
export async function typeDefaultsOf(db: Executor, types: readonly string[]): Promise<Map<string, TypeDefaults>> {
  if (types.length === 0) return new Map();
  const { rows } = await sql<Row>`
    SELECT type, max_attempts, timebox, lease, priority, start_within FROM job_type_defaults WHERE type = ANY(${[...new Set(types)]}::text[])`.execute(
    db.kysely,
  );
  return new Map(rows.map((r) => [r.type, fromRow(r)]));
}

/** Replaces a type's defaults; null removes them. */
export async function typeDefaultsSet(db: Executor, type: string, d: TypeDefaults | null, now: Date): Promise<void> {
  if (d === null) {
    await sql`DELETE FROM job_type_defaults WHERE type = ${type}`.execute(db.kysely);
    return;
  }
  await sql`
    INSERT INTO job_type_defaults (type, max_attempts, timebox, lease, priority, start_within, updated_at)
    VALUES (${type}, ${d.maxAttempts ?? null}::int, ${d.timebox ?? null}::bigint, ${d.lease ?? null}::bigint, ${d.priority ?? null}::int,
            ${d.startWithin ?? null}::bigint, ${now})
    ON CONFLICT (type) DO UPDATE SET max_attempts = EXCLUDED.max_attempts, timebox = EXCLUDED.timebox, lease = EXCLUDED.lease,
      priority = EXCLUDED.priority, start_within = EXCLUDED.start_within, updated_at = EXCLUDED.updated_at`.execute(db.kysely);
}
