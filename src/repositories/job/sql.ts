import { type RawBuilder, sql } from 'kysely';
import { CHANNELS } from '../../db/notifications.js';
import { MIN_GRACE_MS } from '../../domain/job.js';

export const ms = (expr: RawBuilder<unknown>) => sql`(${expr}) * interval '1 millisecond'`;
/** 10 % of the timebox, at least 1 s — timeboxGraceMs in domain/job.ts, per row. */
export const graceSql = (alias: string) => ms(sql`greatest(${sql.ref(`${alias}.timebox`)} / 10, ${MIN_GRACE_MS})`);
/** The row is not past deadline + grace at `now` (reports inside the grace are accepted). */
export const withinGrace = (alias: string, now: Date) =>
  sql`(${sql.ref(`${alias}.deadline`)} IS NULL OR ${sql.ref(`${alias}.deadline`)} + ${graceSql(alias)} >= ${now}::timestamptz)`;
export const iso = (expr: RawBuilder<unknown>) => sql`to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
export const OPEN = sql`('queued', 'running')`;
export const JOBS_CHANNEL = sql.lit(CHANNELS.jobs);
