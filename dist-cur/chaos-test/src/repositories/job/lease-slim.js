import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { compiledOnce } from './compile.js';
import { laneCtes, laneWant, leaseLengthMs, moreCte } from './lease-lanes.js';
import { defaultGroupBlocked, defaultGroupPlaces, WITHIN_DEFAULT_GROUP_SHARE } from './lease-default-group.js';
import { JOB_COLUMNS, leasedFromRow } from './row.js';
import { ms } from './sql.js';
/**
 * The columns the claim sends back: not those it sets to what the caller knows (state, worker,
 * lease_token, started_at, updated_at, finished_at, progress) or to what follows from the row
 * (lease_expires_at and deadline from lease_duration and timebox). Four timestamps fewer to format
 * as text and parse again, on every leased job.
 */
const DERIVED = new Set([
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
 * When any of those conditions does not hold — read in the statement's own snapshot, as the full
 * statement reads them — it leases nothing and answers null: the caller runs the full statement
 * (the row locks this one took ended with it, or are the caller's own in a transaction).
 */
export async function jobLeaseSlim(db, p) {
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
    };
    const rows = await compiledOnce(db, `lease-slim${byType ? '+type' : ''}${byGroup ? '+group' : ''}`, values, (v) => {
        const now = sql `${v.now}::timestamptz`;
        // an untyped lease takes no job of a push type (those go to the type's endpoint)
        const pushTypes = byType ? sql `` : sql `OR EXISTS (SELECT 1 FROM push_type)`;
        const laneTypes = byType ? sql `ARRAY(SELECT DISTINCT t FROM unnest(${v.types}::text[]) AS t)` : sql `NULL::text[]`;
        const claim = { byType, now, laneTypes, groups: v.groups, want: v.want, limit: v.limit };
        const lease = leaseLengthMs;
        return sql `
    WITH gate AS MATERIALIZED (
      SELECT EXISTS (SELECT 1 FROM flow_policy p WHERE p.paused OR p.concurrency IS NOT NULL OR p.rate_limit IS NOT NULL)
          OR EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND d.rate_limit IS NOT NULL)
          OR (EXISTS (SELECT 1 FROM flow_default d WHERE d.kind = 'group' AND d.concurrency IS NOT NULL)
              AND EXISTS (SELECT 1 FROM flow_policy p WHERE p.kind = 'group'))
          ${pushTypes} AS full
    ),
    ${defaultGroupBlocked(now)},
    ${laneCtes({
            ...claim,
            blockedGroups: sql `(SELECT f.groups FROM default_full f)`,
            onlyIf: sql `NOT (SELECT g.full FROM gate g)`,
            columns: sql `j.id, j.type, j.group_, j.priority, j.run_at, j.periodic_task_id, j.run_interval, j.start_by`,
        })},
    candidates AS MATERIALIZED (
      SELECT p.* FROM (SELECT p.*, row_number() OVER (PARTITION BY p.lane_type, p.group_ ORDER BY p.run_at, p.id) AS turn FROM picked p) p
      WHERE ${WITHIN_DEFAULT_GROUP_SHARE}
      ORDER BY p.turn, p.r LIMIT ${v.limit}
    ),
    -- what only the full statement does: flow control, periodic tasks' machinery, startBy
    special AS MATERIALIZED (
      SELECT (SELECT g.full FROM gate g)
          OR EXISTS (SELECT 1 FROM candidates c WHERE c.periodic_task_id IS NOT NULL OR c.start_by IS NOT NULL) AS fallback
    ),
    -- under a default concurrency for groups: the candidates that begin in their group's place
    -- (none refused by a declared limit here)
    refused AS MATERIALIZED (SELECT NULL::bigint AS id WHERE false),
    ${defaultGroupPlaces(now)},
    default_holders AS MATERIALIZED (
      SELECT coalesce(array_agg(d.id), '{}') AS ids, coalesce(array_agg(d.last_end), '{}') AS released
      FROM default_places d WHERE EXISTS (SELECT 1 FROM group_default)
    ),
    all_refused AS MATERIALIZED (
      SELECT d.id FROM default_needs d WHERE NOT (SELECT x.fallback FROM special x) AND NOT d.id = ANY ((SELECT h.ids FROM default_holders h)::bigint[])
    ),
    -- slots in the full statement's order: priority desc, run_at, id
    -- and each slot's worker and lease read from the arrays by position (a join with the arrays
    -- unnested was planned as a nested loop over them: slots × candidates rows); a job begun in its
    -- group's place starts not before its group's last job ended
    assigned AS MATERIALIZED (
      SELECT a.id, a.slot, (${v.workers}::text[])[a.slot] AS worker, (${v.leases}::bigint[])[a.slot] AS lease,
             (${v.tokens}::uuid[])[a.slot] AS token, a.k IS NOT NULL AS in_default,
             greatest(${now}, (SELECT h.released[a.k] FROM default_holders h)) AS start_at
      FROM (SELECT c.id, row_number() OVER (ORDER BY c.priority DESC, c.run_at, c.id) AS slot,
                   (SELECT array_position(h.ids, c.id) FROM default_holders h) AS k
            FROM candidates c
            WHERE NOT (SELECT x.fallback FROM special x) AND NOT c.id = ANY (ARRAY(SELECT r.id FROM all_refused r))) a
    ),
    ${moreCte(claim)},
    leased AS (
      UPDATE job j SET
        state = 'running',
        worker = s.worker,
        attempts = j.attempts + 1,
        lease_token = s.token,
        lease_expires_at = s.start_at + ${ms(lease)},
        lease_duration = ${lease},
        started_at = s.start_at,
        deadline = CASE WHEN j.timebox IS NULL THEN NULL ELSE s.start_at + ${ms(sql `j.timebox`)} END,
        finished_at = NULL,
        progress = NULL,
        holds_slot = s.in_default,
        group_default = s.in_default,
        debounce_until = NULL,
        updated_at = ${now}
      FROM assigned s
      WHERE j.id = s.id
      RETURNING ${sql.join(RETURNED.map((c) => sql.ref(`j.${c}`)))}, s.slot, CASE WHEN s.start_at > ${now} THEN s.start_at END AS start_at
    )
    SELECT ${sql.join(RETURNED.map((c) => sql.ref(`l.${c}`)))}, l.slot, l.start_at, false AS fallback, false AS more, false AS contended,
           NULL::int AS refused
    FROM leased l
    UNION ALL
    SELECT ${sql.join(RETURNED.map(() => sql `NULL`))}, NULL, NULL, x.fallback, m.more, m.contended, (SELECT count(*)::int FROM all_refused)
    FROM special x, more m
    WHERE x.fallback OR m.more OR m.contended OR EXISTS (SELECT 1 FROM all_refused)`;
    });
    const leased = [];
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
            r.worker = p.slots[Number(r.slot) - 1].worker;
            r.lease_token = values.tokens[Number(r.slot) - 1];
            r.lease_expires_at = new Date(start.getTime() + lease);
            r.started_at = start;
            r.deadline = r.timebox === null ? null : new Date(start.getTime() + Number(r.timebox));
            r.finished_at = null;
            r.progress = null;
            r.updated_at = p.now;
            leased.push(leasedFromRow(r, null, Number(r.slot) - 1));
        }
        else if (r.fallback)
            return null;
        else {
            more = r.more;
            contended = r.contended;
            refused = r.refused ?? 0;
        }
    }
    leased.sort((a, b) => a.slot - b.slot);
    return { leased, refused, more, contended };
}
//# sourceMappingURL=lease-slim.js.map