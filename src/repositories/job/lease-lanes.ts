import { type RawBuilder, sql } from 'kysely';
import { DEFAULT_LEASE_MS } from '../../domain/job.js';
import { ms } from './sql.js';

/**
 * The claim's part that the full lease statement (lease.ts) and the slim claim (lease-slim.ts)
 * share: fairness between groups (migrations 0008, 0031). The lanes of the highest priority that
 * has a runnable job — one per group, per type when the worker names types — and from each lane its
 * first jobs in run_at order, round by round: every lane's first job (lanes in random order), then
 * every lane's second, and so on. A lane gives at most its share (limit / lanes), so one group's
 * backlog fills only what the others leave; `more` asks the caller to claim again for slots left
 * empty while a lane may hold more.
 */
export interface LaneClaim {
  byType: boolean;
  now: RawBuilder<unknown>;
  /** The types whose lanes are walked (NULL::text[] for every type). */
  laneTypes: RawBuilder<unknown>;
  /** The named groups (NULL: every group). */
  groups: unknown;
  /** How many lanes to look at (laneWant). */
  want: unknown;
  /** Where on the ring of group hashes the walk starts (an int4 value: nextLaneStart()). */
  start: unknown;
  /** Slots to fill. */
  limit: unknown;
  /** Groups that are no lanes (a text[] expression). */
  blockedGroups: RawBuilder<unknown>;
  /**
   * The groups default's concurrency (an int expression; none: no default): groups without a policy
   * of their own with that many jobs running under it are no lanes either.
   */
  defaultConcurrency?: RawBuilder<unknown>;
  /** A condition without which the statement walks no lane at all. */
  onlyIf?: RawBuilder<unknown>;
  /** The columns `picked` takes of each job (of alias j). */
  columns: RawBuilder<unknown>;
  /** A further condition on the jobs of an untyped claim's lanes. */
  untypedJobsAlso?: RawBuilder<unknown>;
}

/**
 * How many lanes (groups) a lease looks at: every group when there are few, a run of the hash ring
 * of groups from the lease's starting point (nextLaneStart) when there are more.
 */
export const laneWant = (slots: number): number => Math.min(Math.max(slots, 32), 200);

/** 2^32 ÷ the golden ratio: the step between two leases' starting points on the ring. */
const GOLDEN_STEP = 0x9e3779b9;

/**
 * The starting points of successive walks of the ring, from `offset`: each a golden-ratio step of
 * the ring after the one before (as int4, the type of a group's hash). Any few successive points lie
 * far apart — each falls into the widest gap the earlier ones left (three-distance theorem): five in
 * a row are at least a seventh of the ring apart — so leases made close together start in
 * different parts of the ring. From random points they often started in the same stretch, or in
 * one that a lease still in flight had taken: the later lease found its lanes' jobs locked or their
 * groups' places taken, and claimed again (a quarter more statements with 1,000 groups under the
 * groups default; bench/README.md). Over many leases every part of the ring is started from
 * equally often, more evenly than from random points.
 */
export function laneStarts(offset: number): () => number {
  let at = offset >>> 0;
  return () => {
    at = (at + GOLDEN_STEP) >>> 0;
    return at | 0;
  };
}

/**
 * This process's walks, from a random offset: two instances' points are unrelated, as before (each
 * instance's own leases are the ones it makes close together).
 */
export const nextLaneStart = laneStarts(Math.floor(Math.random() * 2 ** 32));

/**
 * The CTEs `lanes`, `top_lanes`, `quota` and `picked` (the lanes' jobs, locked, with `lane_type`
 * and the lane's random `r`). Each lane's claim starts at the lane's first job (jobclock_lanes,
 * migration 0031) by an index descent, not by walking the entries of jobs that left the queue; the
 * bound leads with the group's hash, which only the fairness indexes lead with (a bound leading with
 * run_at gave job_queued_run_at_idx a range under the generic plan).
 */
export function laneCtes(c: LaneClaim): RawBuilder<unknown> {
  const due = sql`j.run_at < ${c.now} + interval '1 millisecond'
              AND (hashtext(j.group_), j.group_, j.run_at, j.id) >= (l.hash, l.group_, l.first_run_at, l.first_id)`;
  const laneJobs = c.byType
    ? sql`SELECT ${c.columns} FROM job j
            WHERE j.state = 'queued' AND j.type = l.type AND j.priority = l.priority AND hashtext(j.group_) = l.hash AND j.group_ = l.group_
              AND ${due}
            ORDER BY j.type, j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id
            LIMIT (SELECT q FROM quota)
            FOR UPDATE SKIP LOCKED`
    : sql`SELECT ${c.columns} FROM job j
            WHERE j.state = 'queued' AND j.priority = l.priority AND hashtext(j.group_) = l.hash AND j.group_ = l.group_
              AND ${due}${c.untypedJobsAlso ? sql` AND ${c.untypedJobsAlso}` : sql``}
            ORDER BY j.priority DESC, hashtext(j.group_), j.group_, j.run_at, j.id
            LIMIT (SELECT q FROM quota)
            FOR UPDATE SKIP LOCKED`;
  return sql`
    lanes AS MATERIALIZED (
      SELECT l.*, random() AS r
      FROM jobclock_lanes(${c.laneTypes}, ${c.groups}::text[], ${c.now}, ${c.want}::int,
                          ${c.start}::int, ${c.blockedGroups},
                          ${c.defaultConcurrency ?? sql`NULL`}::int) l
      ${c.onlyIf ? sql`WHERE ${c.onlyIf}` : sql``}
    ),
    top_lanes AS MATERIALIZED (SELECT * FROM lanes WHERE priority = (SELECT max(priority) FROM lanes)),
    quota AS MATERIALIZED (SELECT ceil(${c.limit}::numeric / greatest(count(*), 1))::int AS q FROM top_lanes),
    picked AS MATERIALIZED (
      SELECT c.*, l.type AS lane_type, l.r FROM top_lanes l CROSS JOIN LATERAL (${laneJobs}) c
    )`;
}

/**
 * The CTE `more` (after `candidates`): `more`, slots left empty while a lane gave its whole share,
 * more lanes may exist than were looked at, or a lower priority has queued jobs; `contended`, a
 * lane gave nothing although its job was runnable in this snapshot — another claim took or locked
 * it since (the lane walk and the lane's pick read the same rows, unless `contendedIf` says they
 * may not).
 */
export function moreCte(
  c: Pick<LaneClaim, 'byType' | 'laneTypes' | 'limit' | 'want'> & { contendedIf?: RawBuilder<unknown> },
): RawBuilder<unknown> {
  // Whether a queued job waits below the lanes' priority: the highest such, read off the fairness
  // index (per type for a typed claim) by a subquery ordered and limited that is not an EXISTS's
  // own (PostgreSQL drops ORDER BY and LIMIT there). A bare EXISTS, planned generically while most
  // rows were queued, became a sequential scan expecting a match at once; when none was there — a
  // queue of one priority run dry, the usual case — it read the whole table on every lease that
  // came back short.
  const lowerLevel = c.byType
    ? sql`EXISTS (SELECT 1 FROM unnest(${c.laneTypes}) AS lt(type) CROSS JOIN LATERAL (
            SELECT j.priority FROM job j WHERE j.state = 'queued' AND j.type = lt.type AND j.priority < (SELECT max(priority) FROM lanes)
            ORDER BY j.type, j.priority DESC LIMIT 1) x)`
    : sql`(SELECT j.priority FROM job j WHERE j.state = 'queued' AND j.priority < (SELECT max(priority) FROM lanes)
           ORDER BY j.priority DESC LIMIT 1) IS NOT NULL`;
  return sql`
    more AS MATERIALIZED (
      SELECT (SELECT count(*) FROM candidates) < ${c.limit} AND (
               EXISTS (SELECT 1 FROM picked GROUP BY lane_type, group_ HAVING count(*) >= (SELECT q FROM quota))
               OR (SELECT count(*) FROM lanes) >= ${c.want}
               OR ${lowerLevel}) AS more,
             (SELECT count(*) FROM candidates) < ${c.limit} AND ${c.contendedIf ?? sql`true`}
               AND (SELECT count(*) FROM (SELECT DISTINCT p.lane_type, p.group_ FROM picked p) x) < (SELECT count(*) FROM top_lanes) AS contended
    )`;
}

/**
 * What a lease sets on each job `j` it begins (the SET list of every lease statement's UPDATE):
 * running for `worker` with lease token `token` from `start` (now, or later when the job that held
 * its place ended later by the clock that recorded it), the lease's length from slot `s`
 * (leaseLengthMs), a new attempt; `holdsSlot`: it holds a permit or a place of the groups default,
 * `groupDefault`: begun under the groups default (migration 0036).
 */
export const leasedJobSet = (c: {
  now: RawBuilder<unknown>;
  start: RawBuilder<unknown>;
  worker: RawBuilder<unknown>;
  token: RawBuilder<unknown>;
  holdsSlot: RawBuilder<unknown>;
  groupDefault: RawBuilder<unknown>;
}) => sql`
        state = 'running',
        worker = ${c.worker},
        attempts = j.attempts + 1,
        lease_token = ${c.token},
        lease_expires_at = ${c.start} + ${ms(leaseLengthMs)},
        lease_duration = ${leaseLengthMs},
        started_at = ${c.start},
        deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE ${c.start} + ${ms(sql`j.timebox`)} END,
        finished_at = NULL,
        progress = NULL,
        holds_slot = ${c.holdsSlot},
        group_default = ${c.groupDefault},
        -- a debounced job that began no longer holds its key (see migration 0024)
        debounce_until = NULL,
        updated_at = ${c.now}`;

/** A lease's length for slot `s` and job `j`: the slot's, else the job type's default (a probe of a table that is empty unless types have defaults), else jobclock's. */
export const leaseLengthMs = sql`coalesce(s.lease, (SELECT td.lease FROM job_type_defaults td WHERE td.type = j.type), ${DEFAULT_LEASE_MS}::bigint)`;
