import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { PreparedExecutor } from '../../db/executor.js';
import { compiledOnce } from './compile.js';
import { defaultStarts, IN_GROUP_ORDER } from './lease-default-group.js';
import { laneCtes, laneWant, leasedJobSet, moreCte, nextLaneStart } from './lease-lanes.js';
import { JOB_COLUMNS, type JobRow, type LeasedInSlot, leasedFromRow } from './row.js';

/**
 * The columns the claim sends back: not those it sets to what the caller knows (state, worker,
 * lease_token, started_at, updated_at, finished_at, progress) or to what follows from the row
 * (lease_expires_at and deadline from lease_duration and timebox). Four timestamps fewer to format
 * as text and parse again, on every leased job.
 */
const DERIVED = new Set<string>([
  'state',
  'worker',
  'lease_token',
  'lease_expires_at',
  'started_at',
  'deadline',
  'finished_at',
  'progress',
  'updated_at',
]);
const RETURNED = JOB_COLUMNS.filter((c) => !DERIVED.has(c));

/** What the slim claim needs of a lease (see LeaseParams in lease.ts). */
export interface SlimLeaseParams {
  now: Date;
  types?: readonly string[] | undefined;
  groups?: readonly string[] | undefined;
  slots: readonly { worker: string; leaseMs: number | null }[];
  /** As LeaseParams.laneStart. */
  laneStart?: number | undefined;
}

/** A slim claim's outcome: null when it stood aside for the full statement (nothing was changed). */
export interface SlimLeaseResult {
  leased: LeasedInSlot[];
  /** Candidates the groups default refused (another lease holds or took their group's place): claim again. */
  refused: number;
  more: boolean;
  contended: boolean;
}

/**
 * The lease statement for the common case, in one statement that decides for itself whether it
 * applies: no flow control configured (no paused type or group, no concurrency or rate limit, no
 * default rate for undeclared groups, no group policy beside a default concurrency, and for a lease
 * naming no types no push type), and no candidate of a periodic task or with a startBy. Then the
 * full statement's answer is exactly its claim: no permits to take, no task to lock, nothing to
 * drop, every candidate runs in its slot — or, under a default concurrency for groups (where no
 * group declared a policy of its own), in its group's place, decided as the full statement decides
 * it (lease-default-group.ts). It claims
 * the same candidates in the same order (fairness between groups through jobclock_lanes, the
 * same share per lane, `more` and `contended` decided the same way), but without the ~30 stages
 * of the full statement, and takes its slots as two arrays rather than JSON.
 *
 * It comes in two forms. The plain claim (`groupsDefault` false) serves no flow control at all; the
 * claim with the default (true) serves a default concurrency for groups as well. Its parts for the
 * default cost the README loop's lease some 15 % where no default is set (measured in lockstep), so
 * it is used only where one is (jobLease).
 *
 * When any of those conditions does not hold — read in the statement's own snapshot, as the full
 * statement reads them — it leases nothing and answers null: the caller runs the full statement
 * (the row locks this one took ended with it, or are the caller's own in a transaction); or, from
 * the plain claim where only a default concurrency for groups is set, 'groups-default': the caller
 * runs the claim with the default.
 */
export async function jobLeaseSlim(
  db: PreparedExecutor,
  p: SlimLeaseParams,
  groupsDefault = false,
): Promise<SlimLeaseResult | 'groups-default' | null> {
  const byType = p.types !== undefined && p.types.length > 0;
  const byGroup = p.groups !== undefined && p.groups.length > 0;
  const values = {
    now: p.now,
    limit: p.slots.length,
    workers: p.slots.map((s) => s.worker),
    leases: p.slots.map((s) => s.leaseMs),
    // each slot's lease token, made here: gen_random_uuid() cost PostgreSQL ~1 µs a job
    tokens: p.slots.map(() => randomUUID()),
    types: byType ? [...new Set(p.types)] : null,
    groups: byGroup ? [...new Set(p.groups)] : null,
    want: laneWant(p.slots.length),
    start: p.laneStart ?? nextLaneStart(),
  };
  type Row = JobRow & {
    slot: number | null;
    start_at: Date | null;
    fallback: boolean;
    groups_default: boolean;
    more: boolean;
    contended: boolean;
    refused: number | null;
  };
  const name = `lease-slim${groupsDefault ? '+default' : ''}${byType ? '+type' : ''}${byGroup ? '+group' : ''}`;
  const rows = await compiledOnce(db, name, values, (v) => {
    const now = sql`${v.now}::timestamptz`;
    // an untyped lease takes no job of a push type (those go to the type's endpoint)
    const pushTypes = byType ? sql`` : sql`OR EXISTS (SELECT 1 FROM push_type)`;
    const laneTypes = byType ? sql`ARRAY(SELECT DISTINCT t FROM unnest(${v.types}::text[]) AS t)` : sql`NULL::text[]`;
    const claim = { byType, now, laneTypes, groups: v.groups, want: v.want, start: v.start, limit: v.limit };
    const columns = sql`j.id, j.type, j.group_, j.priority, j.run_at, j.periodic_task_id, j.start_by`;
    const returned = sql.join(RETURNED.map((c) => sql.ref(`j.${c}`)));
    // what only the full statement does: flow control, periodic tasks' machinery, startBy
    const special = sql`
    special AS MATERIALIZED (
      SELECT (SELECT g.full FROM gate g)
          OR EXISTS (SELECT 1 FROM candidates c WHERE c.periodic_task_id IS NOT NULL OR c.start_by IS NOT NULL) AS fallback
    )`;
    if (!groupsDefault)
      // The plain claim: no flow control at all. When it stands aside because of a default
      // concurrency for groups alone, it says so (the claim with the default serves that).
      return sql<Row>`
    WITH gate AS MATERIALIZED (
      SELECT EXISTS (SELECT 1 FROM flow_policy p WHERE p.paused OR p.concurrency IS NOT NULL OR p.rate_limit IS NOT NULL)
          OR EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND (d.concurrency IS NOT NULL OR d.rate_limit IS NOT NULL))
          ${pushTypes} AS full
    ),
    ${laneCtes({ ...claim, blockedGroups: sql`'{}'::text[]`, onlyIf: sql`NOT (SELECT g.full FROM gate g)`, columns })},
    candidates AS MATERIALIZED (
      SELECT p.* FROM (SELECT p.*, row_number() OVER (PARTITION BY p.lane_type, p.group_ ORDER BY p.run_at, p.id) AS turn FROM picked p) p
      ORDER BY p.turn, p.r LIMIT ${v.limit}
    ),
    ${special},
    -- slots in the full statement's order: priority desc, run_at, id
    -- and each slot's worker and lease read from the arrays by position (a join with the arrays
    -- unnested was planned as a nested loop over them: slots × candidates rows)
    assigned AS MATERIALIZED (
      SELECT a.id, a.slot, (${v.workers}::text[])[a.slot] AS worker, (${v.leases}::bigint[])[a.slot] AS lease,
             (${v.tokens}::uuid[])[a.slot] AS token
      FROM (SELECT c.id, row_number() OVER (ORDER BY c.priority DESC, c.run_at, c.id) AS slot FROM candidates c
            WHERE NOT (SELECT x.fallback FROM special x)) a
    ),
    ${moreCte(claim)},
    leased AS (
      UPDATE job j SET ${leasedJobSet({
        now,
        start: now,
        worker: sql`s.worker`,
        token: sql`s.token`,
        holdsSlot: sql`false`,
        groupDefault: sql`false`,
      })}
      FROM assigned s
      WHERE j.id = s.id
      RETURNING ${returned}, s.slot
    )
    SELECT ${sql.join(RETURNED.map((c) => sql.ref(`l.${c}`)))}, l.slot, NULL::timestamptz AS start_at, false AS fallback,
           false AS groups_default, false AS more, false AS contended, NULL::int AS refused
    FROM leased l
    UNION ALL
    SELECT ${sql.join(RETURNED.map(() => sql`NULL`))}, NULL, NULL, x.fallback,
           -- standing aside for a default concurrency for groups alone (read only then)
           x.fallback AND (SELECT g.full FROM gate g) AND NOT EXISTS (SELECT 1 FROM flow_policy p)
             AND EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND d.concurrency IS NOT NULL AND d.rate_limit IS NULL)
             ${byType ? sql`` : sql`AND NOT EXISTS (SELECT 1 FROM push_type)`},
           m.more, m.contended, NULL
    FROM special x, more m
    WHERE x.fallback OR m.more OR m.contended`;
    // The claim with the default. The gate leaves it no group with a policy of its own while a
    // default concurrency is set, and no default rate: every candidate is of an undeclared group,
    // and the default's only part is the concurrency.
    return sql<Row>`
    WITH gate AS MATERIALIZED (
      SELECT EXISTS (SELECT 1 FROM flow_policy p WHERE p.paused OR p.concurrency IS NOT NULL OR p.rate_limit IS NOT NULL)
          OR EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND d.rate_limit IS NOT NULL)
          OR (EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND d.concurrency IS NOT NULL)
              AND EXISTS (SELECT 1 FROM flow_policy p WHERE p.kind = 'group'))
          ${pushTypes} AS full
    ),
    group_default AS MATERIALIZED (SELECT d.concurrency AS n FROM flow_default d WHERE d.kind = 'group' AND d.concurrency IS NOT NULL),
    ${laneCtes({
      ...claim,
      blockedGroups: sql`'{}'::text[]`,
      defaultConcurrency: sql`(SELECT g.n FROM group_default g)`,
      onlyIf: sql`NOT (SELECT g.full FROM gate g)`,
      columns: sql`${columns}, j.run_interval`,
    })},
    -- a lane gives no more candidates than the default concurrency; k: each one's place in the claim
    candidates AS MATERIALIZED (
      SELECT p.*, row_number() OVER (ORDER BY p.turn, p.r) AS k FROM (
        SELECT p.* FROM (SELECT p.*, row_number() OVER (PARTITION BY p.lane_type, hashtext(p.group_), p.group_ ORDER BY p.run_at, p.id) AS turn FROM picked p) p
        WHERE p.turn <= coalesce((SELECT g.n FROM group_default g), 2147483647)
        ORDER BY p.turn, p.r LIMIT ${v.limit}) p
    ),
    ${special},
    -- under the default, when each candidate starts (by k; null: it may not begin now): one within
    -- the default's share of its group in this claim (rn) and in order takes its group's lock
    starts AS MATERIALIZED (${defaultStarts({
      rows: sql`(SELECT c.*, row_number() OVER (PARTITION BY hashtext(c.group_), c.group_ ORDER BY c.priority DESC, c.run_at, c.id) AS rn
                 FROM candidates c) d`,
      where: sql`EXISTS (SELECT 1 FROM group_default) AND NOT (SELECT x.fallback FROM special x)`,
      may: sql`d.rn <= (SELECT g.n FROM group_default g) AND ${IN_GROUP_ORDER}`,
      n: sql`(SELECT g.n FROM group_default g)`,
      now,
    })}
    ),
    begins AS MATERIALIZED (
      SELECT c.*, CASE WHEN EXISTS (SELECT 1 FROM group_default) THEN (SELECT s.at[c.k] FROM starts s) ELSE ${now} END AS start_at
      FROM candidates c WHERE NOT (SELECT x.fallback FROM special x)
    ),
    -- as in the plain claim; a job begun in its group's place starts not before its group's last job ended
    assigned AS MATERIALIZED (
      SELECT a.id, a.slot, (${v.workers}::text[])[a.slot] AS worker, (${v.leases}::bigint[])[a.slot] AS lease,
             (${v.tokens}::uuid[])[a.slot] AS token, EXISTS (SELECT 1 FROM group_default) AS in_default, a.start_at
      FROM (SELECT b.id, b.start_at, row_number() OVER (ORDER BY b.priority DESC, b.run_at, b.id) AS slot FROM begins b
            WHERE b.start_at IS NOT NULL) a
    ),
    ${moreCte(claim)},
    leased AS (
      UPDATE job j SET ${leasedJobSet({
        now,
        start: sql`s.start_at`,
        worker: sql`s.worker`,
        token: sql`s.token`,
        holdsSlot: sql`s.in_default`,
        groupDefault: sql`s.in_default`,
      })}
      FROM assigned s
      WHERE j.id = s.id
      RETURNING ${returned}, s.slot, CASE WHEN s.start_at > ${now} THEN s.start_at END AS start_at
    )
    SELECT ${sql.join(RETURNED.map((c) => sql.ref(`l.${c}`)))}, l.slot, l.start_at, false AS fallback, false AS groups_default,
           false AS more, false AS contended, NULL::int AS refused
    FROM leased l
    UNION ALL
    SELECT ${sql.join(RETURNED.map(() => sql`NULL`))}, NULL, NULL, x.fallback, false, m.more, m.contended,
           (SELECT count(*)::int FROM begins b WHERE b.start_at IS NULL)
    FROM special x, more m
    WHERE x.fallback OR m.more OR m.contended OR EXISTS (SELECT 1 FROM begins b WHERE b.start_at IS NULL)`;
  });
  const leased: LeasedInSlot[] = [];
  let more = false;
  let contended = false;
  let refused = 0;
  for (const r of rows) {
    if (r.id !== null) {
      // what the claim set, known here: not sent back (but for a start after its group's last job
      // ended, later than now)
      const lease = Number(r.lease_duration);
      const start = r.start_at ?? p.now;
      r.state = 'running';
      r.worker = p.slots[Number(r.slot) - 1]!.worker;
      r.lease_token = values.tokens[Number(r.slot) - 1]!;
      r.lease_expires_at = new Date(start.getTime() + lease);
      r.started_at = start;
      r.deadline = r.timebox === null ? null : new Date(start.getTime() + Number(r.timebox));
      r.finished_at = null;
      r.progress = null;
      r.updated_at = p.now;
      leased.push(leasedFromRow(r, null, Number(r.slot) - 1));
    } else if (r.fallback) return r.groups_default ? 'groups-default' : null;
    else {
      more = r.more;
      contended = r.contended;
      refused = r.refused ?? 0;
    }
  }
  leased.sort((a, b) => a.slot - b.slot);
  return { leased, refused, more, contended };
}
