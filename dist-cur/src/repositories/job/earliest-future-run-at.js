import { sql } from 'kysely';
/**
 * When sleeping waiters must wake, or null: the earliest run_at of a queued job not yet runnable at
 * `now`, or the moment a rate-limited type or group (or an undeclared group under the default rate)
 * gets a token back (a token used at t is free again at t + window), whichever comes first. Runnability is judged at millisecond precision, as
 * in jobLease (see there).
 */
export async function jobEarliestFutureRunAt(db, now) {
    const { rows } = await sql `
    SELECT least(
      (SELECT run_at FROM job WHERE state = 'queued' AND run_at >= ${now}::timestamptz + interval '1 millisecond'
        ORDER BY run_at LIMIT 1),
      (SELECT min(t.used_at + p.rate_window_ms * interval '1 millisecond')
         FROM flow_policy p JOIN flow_token t ON t.kind = p.kind AND t.name = p.name AND t.n <= p.rate_limit
        WHERE p.rate_limit IS NOT NULL AND t.used_at + p.rate_window_ms * interval '1 millisecond' > ${now}::timestamptz),
      -- the default rate of undeclared groups (migration 0027): of the groups that used every
      -- token in the window, the oldest token (a group with a token left wakes nobody when one frees)
      (SELECT min(x.first_used) + d.rate_window_ms * interval '1 millisecond'
         FROM flow_default d
         CROSS JOIN LATERAL (
           SELECT min(t.used_at) AS first_used FROM flow_token t
           WHERE t.kind = 'default-group' AND t.n <= d.rate_limit
             AND t.used_at > ${now}::timestamptz - d.rate_window_ms * interval '1 millisecond'
           GROUP BY t.name
           HAVING count(*) >= d.rate_limit) x
        WHERE d.kind = 'group' AND d.rate_limit IS NOT NULL
        GROUP BY d.rate_window_ms)
    ) AS at`.execute(db.kysely);
    return rows[0]?.at ?? null;
}
//# sourceMappingURL=earliest-future-run-at.js.map