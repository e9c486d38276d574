import { sql } from 'kysely';
import type { Executor } from '../../db/executor.js';
import type { JobState } from '../../domain/job.js';

/** Which jobs: the GET /jobs filters (and the bulk actions'). */
export interface JobFilter {
  state?: JobState | undefined;
  type?: string | undefined;
  group?: string | undefined;
  periodicTaskId?: string | undefined;
  worker?: string | undefined;
  /** Text searched (case-insensitive substring) in args, subject and error. */
  q?: string | undefined;
  /** Jobs whose args contain this JSON object (`@>`). */
  argsContains?: Record<string, unknown> | undefined;
  createdAfter?: Date | undefined;
  createdBefore?: Date | undefined;
}

export interface JobSearchFilter extends JobFilter {
  /** Keyset: only jobs with a smaller id (the last id of the previous page). */
  beforeId?: string | undefined;
  limit: number;
}

/** Escapes LIKE's wildcards so that `q` matches literally. */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** The rows of `job` a filter selects, as a Kysely query to refine. */
export function filtered(db: Executor, f: JobFilter) {
  let q = db.kysely.selectFrom('job');
  if (f.state !== undefined) q = q.where('state', '=', f.state);
  if (f.type !== undefined) q = q.where('type', '=', f.type);
  if (f.group !== undefined) q = q.where('group_', '=', f.group);
  if (f.periodicTaskId !== undefined) q = q.where('periodic_task_id', '=', f.periodicTaskId);
  if (f.worker !== undefined) q = q.where('worker', '=', f.worker);
  if (f.createdAfter !== undefined) q = q.where('created_at', '>=', f.createdAfter);
  if (f.createdBefore !== undefined) q = q.where('created_at', '<', f.createdBefore);
  if (f.argsContains !== undefined) q = q.where(sql<boolean>`args @> ${JSON.stringify(f.argsContains)}::jsonb`);
  if (f.q !== undefined && f.q !== '') {
    const p = likePattern(f.q);
    q = q.where(sql<boolean>`(args::text ILIKE ${p} ESCAPE '\\' OR subject ILIKE ${p} ESCAPE '\\' OR error::text ILIKE ${p} ESCAPE '\\')`);
  }
  return q;
}
