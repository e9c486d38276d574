/** The table: one row per figure, medians over rounds with min–max, ratios taken within each round. */
import type { UnitResult } from './lib/context.js';
import { GROWTH_READS, HOT_INDEXES } from './measure/growth.js';
import { LIMITED_WORK } from './measure/worker-protocol.js';
import { GROWTH_TASKS } from './lib/templates.js';
import { fmt, fmtSpread, latencySummary, type Spread, spread } from './lib/stats.js';

export type RoundResults = Map<string, UnitResult | { error: string }>;

export interface TableRow {
  measurement: string;
  result: string;
  ratio: string;
  target: string;
  pass: string;
}

export interface Summary {
  rows: TableRow[];
  /** Machine-readable version of every row, for latest.json. */
  figures: Record<string, unknown>;
}

const ok = (r: UnitResult | { error: string } | undefined): r is UnitResult => !!r && !('error' in r);

function values(rounds: RoundResults[], key: string, pick: (r: UnitResult) => number = (r) => r.value): number[] {
  return rounds
    .map((m) => m.get(key))
    .filter(ok)
    .map(pick)
    .filter((v) => Number.isFinite(v));
}

/** Why a figure is missing: the first error of that unit, or "not run". */
function reason(rounds: RoundResults[], key: string): string {
  for (const m of rounds) {
    const r = m.get(key);
    if (r && 'error' in r) return `n/a: ${r.error}`;
  }
  return 'n/a: not run';
}

function ratios(rounds: RoundResults[], num: string, den: string, pick: (r: UnitResult) => number = (r) => r.value): number[] {
  const out: number[] = [];
  for (const m of rounds) {
    const a = m.get(num);
    const b = m.get(den);
    if (ok(a) && ok(b) && pick(b) > 0) out.push(pick(a) / pick(b));
  }
  return out;
}

/** Time-boxed runs and failed rounds, said next to a figure that other rounds produced. */
function notes(rounds: RoundResults[], key: string): string {
  const results = rounds.map((m) => m.get(key)).filter((r) => r !== undefined);
  const parts: string[] = [];
  const noted = results
    .filter(ok)
    .map((r) => r.note)
    .filter((n): n is string => !!n);
  for (const kind of new Set(noted.map((n) => (n.startsWith('time-boxed') ? 'time-boxed' : n)))) {
    const count = noted.filter((n) => n === kind || (kind === 'time-boxed' && n.startsWith(kind))).length;
    parts.push(results.length > 1 ? `${kind} in ${count}/${results.length} rounds` : kind === 'time-boxed' ? noted[0]! : kind);
  }
  const failed = results.filter((r): r is { error: string } => !!r && 'error' in r);
  if (failed.length > 0) parts.push(`failed in ${failed.length}/${results.length} rounds: ${failed[0]!.error}`);
  return parts.length ? ` (${parts.join('; ')})` : '';
}

const passMark = (pass: boolean | null) => (pass === null ? '—' : pass ? 'PASS' : 'FAIL');

export function summarize(
  rounds: RoundResults[],
  lateness: RoundResults | null,
  scheduleNames: string[],
  statementSource: string,
): Summary {
  const rows: TableRow[] = [];
  const figures: Record<string, unknown> = {};

  /** A throughput row; `vs[0]` may carry a target (min > 0), the other ratios are for context. */
  const rate = (key: string, label: string, unit: string, vs: { key: string; label: string; min?: number }[] = []) => {
    const v = spread(values(rounds, key));
    const result = v ? fmtSpread(v, unit) + notes(rounds, key) : reason(rounds, key);
    const parts: string[] = [];
    const ratioFigures: Record<string, Spread | null> = {};
    let target = '';
    let pass: boolean | null = null;
    for (const [i, ref] of vs.entries()) {
      const r = spread(ratios(rounds, key, ref.key));
      ratioFigures[ref.key] = r;
      parts.push(r ? `${fmtSpread(r)}× ${ref.label}` : `n/a vs ${ref.label}`);
      if (i === 0 && ref.min) {
        target = `≥ ${ref.min}× ${ref.label}`;
        pass = r ? r.median >= ref.min : null;
      }
    }
    rows.push({ measurement: label, result, ratio: parts.join(' · '), target, pass: target ? passMark(pass) : '' });
    figures[key] = { label, unit, value: v, ratios: ratioFigures, target: target || undefined, pass: target ? pass : undefined };
  };

  // Worker protocol
  rate('a.raw1', '(a) raw SQL claim + finish, 1 job/statement, 8 conns', 'jobs/s');
  rate('a.raw100', '(a) raw SQL claim + finish, 100 jobs/statement, 4 conns', 'jobs/s');
  rate('a.lease100', "(a) jobclock's lease statement (jobLease) + raw finish, 100/statement, 4 conns", 'jobs/s', [
    { key: 'a.raw100', label: 'raw 100' },
  ]);
  rate('a.slim100', '(a) lease without the periodic machinery (proposal) + raw finish, 4 conns', 'jobs/s', [
    { key: 'a.lease100', label: 'jobLease' },
    { key: 'a.raw100', label: 'raw 100' },
  ]);
  rate('b.loop', '(b) jobclock, README loop: lease 100 {types, wait} + POST /jobs/reports, 4 workers', 'jobs/s', [
    { key: 'c.pgboss12', label: 'pg-boss 12', min: 1.0 },
    { key: 'c.graphile018', label: 'graphile 0.18' },
    { key: 'a.raw100', label: 'raw 100' },
  ]);
  rate('b.push', '(b) jobclock: a push type, POSTed to a local receiver that answers 200 at once (no worker)', 'jobs/s', [
    { key: 'b.loop', label: 'README loop' },
  ]);
  rate('b.runner', '(b) @jobclock/client Worker, no-op handlers, 4 runners × 100 slots', 'jobs/s', [
    { key: 'b.loop', label: 'README loop', min: 0.9 },
  ]);
  rate('b.hooks3', '(b) jobclock: README loop with 3 webhooks subscribed to job.finished', 'jobs/s', [
    { key: 'b.loop', label: 'README loop', min: 0.8 },
  ]);
  {
    // the deliveries the loop caused, sent to a local receiver that answers 204 at once
    const perSec = spread(values(rounds, 'b.hooks3', (r) => r.extra?.deliveriesPerSec ?? Number.NaN));
    const behind = spread(values(rounds, 'b.hooks3', (r) => r.extra?.deliveriesPendingAtLoopEnd ?? Number.NaN));
    const drain = spread(values(rounds, 'b.hooks3', (r) => r.extra?.deliveriesDrainPerSec ?? Number.NaN));
    if (perSec && behind) {
      rows.push({
        measurement: '(b) … its webhook deliveries, until every one is delivered',
        result: `${fmt(perSec.median)} deliveries/s; ${fmt(behind.median)} still pending when the loop ended${
          drain ? `; ${fmtSpread(drain, 'deliveries/s')} once it had` : ''
        }`,
        ratio: '',
        target: '',
        pass: '',
      });
    }
  }
  rate('k.python.loop', '(k) Python: the README loop by hand (urllib), 4 threads, 1 process', 'jobs/s', [
    { key: 'b.loop', label: 'README loop' },
  ]);
  rate('k.python.worker', '(k) Python jobclock_worker, no-op handlers, 4 Workers × 100 slots, 1 process', 'jobs/s', [
    { key: 'k.python.loop', label: 'Python loop', min: 0.9 },
  ]);
  rate('k.go.loop', '(k) Go: the README loop by hand (net/http), 4 goroutines, 1 process', 'jobs/s', [
    { key: 'b.loop', label: 'README loop' },
  ]);
  rate('k.go.worker', '(k) Go clients/go Worker, no-op handlers, 4 Workers × 100 slots, 1 process', 'jobs/s', [
    { key: 'k.go.loop', label: 'Go loop', min: 0.9 },
  ]);
  rate('b.types', '(b) jobclock: the same with types alone', 'jobs/s', [{ key: 'b.loop', label: 'README loop' }]);
  rate('b.wait', '(b) jobclock: the same with wait alone', 'jobs/s', [{ key: 'b.loop', label: 'README loop' }]);
  rate('b.reports', '(b) jobclock: the same with neither', 'jobs/s', [
    { key: 'b.loop', label: 'README loop' },
    { key: 'c.pgboss12', label: 'pg-boss 12' },
  ]);
  rate('b.groups100', '(b) jobclock: README loop, jobs spread over 100 groups taking turns', 'jobs/s', [
    { key: 'b.loop', label: 'README loop', min: 0.8 },
  ]);
  rate('b.seq1000', '(b) jobclock: README loop over 1,000 groups, each one job at a time (groups-default 1)', 'jobs/s', [
    { key: 'b.loop', label: 'README loop' },
  ]);
  for (const key of ['b.seq1000', 'b.seq100k']) {
    // the share of time each busy group has a job running, and runs that began before the previous ended
    const median = spread(values(rounds, key, (r) => r.extra?.groupBusyMedian ?? Number.NaN));
    const overlaps = spread(values(rounds, key, (r) => r.extra?.groupOverlaps ?? Number.NaN));
    if (median && overlaps) {
      rows.push({
        measurement: `(b) … ${key}: share of time each group that ran > 1 job had one running (median over groups)`,
        result: `${fmt(median.median * 100)}% [${fmt(median.min * 100)}–${fmt(median.max * 100)}]; runs overlapping their group's previous: ${fmt(overlaps.max)}`,
        ratio: '',
        target: '0 overlaps',
        pass: passMark(overlaps.max === 0),
      });
      figures[`${key}.busy`] = { median, overlaps };
    }
  }
  // the target is the default's cost: against the same loop over the same 100,000 groups without
  // it (the spread over as many groups costs the README loop by itself, b.groups100k; bench/README.md)
  rate('b.seq100k', '(b) jobclock: the same over 100,000 groups', 'jobs/s', [
    { key: 'b.groups100k', label: 'the same without the default', min: 0.8 },
    { key: 'b.loop', label: 'README loop' },
  ]);
  rate('b.groups100k', '(b) jobclock: README loop over 100,000 groups, no default', 'jobs/s', [{ key: 'b.loop', label: 'README loop' }]);
  rate('b.rate1000', '(b) jobclock: README loop over 1,000 groups under a default rate (1000/1s) that does not bind', 'jobs/s', [
    { key: 'b.groups1000', label: 'the same without the default' },
    { key: 'b.loop', label: 'README loop' },
  ]);
  rate('b.groups1000', '(b) jobclock: README loop over 1,000 groups, no default', 'jobs/s', [{ key: 'b.loop', label: 'README loop' }]);
  rate('b.policy', '(b) jobclock: README loop under a concurrency limit (1000) that does not bind', 'jobs/s', [
    { key: 'b.loop', label: 'README loop', min: 0.85 },
  ]);
  rate('b.policyrate', '(b) jobclock: the same with a rate (50,000/1s) that does not bind as well', 'jobs/s', [
    { key: 'b.loop', label: 'README loop' },
  ]);
  rate('b.limit50', '(b) jobclock: README loop held at concurrency 50', 'jobs/s', [{ key: 'b.loop', label: 'README loop' }]);
  {
    // the limit must bind the whole time: running sampled every 10 ms never passes it
    const most = spread(values(rounds, 'b.limit50', (r) => r.extra?.runningMax ?? Number.NaN));
    const share = spread(values(rounds, 'b.limit50', (r) => r.extra?.runningAtLimitShare ?? Number.NaN));
    const mean = spread(values(rounds, 'b.limit50', (r) => r.extra?.runningMean ?? Number.NaN));
    if (most && share && mean) {
      rows.push({
        measurement: '(b) … its running count, sampled every 10 ms',
        result: `max ${fmt(most.max)}, mean ${fmt(mean.median)}; at 50 in ${fmt(share.median * 100)}% of samples`,
        ratio: '',
        target: '≤ 50 throughout',
        pass: passMark(most.max <= 50),
      });
      figures['b.limit50.running'] = { max: most.max, mean, atLimitShare: share };
    }
  }
  {
    // a binding limit with jobs that take time: 50 should be running all the time
    const full = (LIMITED_WORK.concurrency * 1000) / LIMITED_WORK.handlerMs;
    rate(
      'b.limit50work',
      `(b) Worker runners, ${LIMITED_WORK.handlerMs} ms jobs, held at concurrency ${LIMITED_WORK.concurrency}`,
      'jobs/s',
      [],
    );
    const jobs = spread(values(rounds, 'b.limit50work'));
    const most = spread(values(rounds, 'b.limit50work', (r) => r.extra?.runningMax ?? Number.NaN));
    const mean = spread(values(rounds, 'b.limit50work', (r) => r.extra?.runningMean ?? Number.NaN));
    const share = spread(values(rounds, 'b.limit50work', (r) => r.extra?.runningAtLimitShare ?? Number.NaN));
    if (jobs && most && mean && share) {
      rows.push({
        measurement: '(b) … its running count, sampled every 10 ms, and the limit used',
        result:
          `max ${fmt(most.max)}, mean ${fmt(mean.median)} [${fmt(mean.min)}–${fmt(mean.max)}]; at ${LIMITED_WORK.concurrency} in ` +
          `${fmt(share.median * 100)}% of samples; ${fmt((jobs.median / full) * 100)}% of ${fmt(full)} jobs/s`,
        ratio: '',
        target: `≤ ${LIMITED_WORK.concurrency} throughout; mean ≥ ${0.9 * LIMITED_WORK.concurrency}`,
        pass: passMark(most.max <= LIMITED_WORK.concurrency && mean.min >= 0.9 * LIMITED_WORK.concurrency),
      });
      figures['b.limit50work.running'] = { max: most.max, mean, atLimitShare: share, used: jobs.median / full };
    }
  }
  {
    const history = spread(values(rounds, 'j.reads', (r) => r.extra?.history ?? Number.NaN));
    const n = history ? `${fmt(history.median / 1e6)} M` : 'many';
    // opt-in rows (they build large tables first): shown only when they ran
    if (spread(values(rounds, 'j.base'))) rate('j.base', '(j) README loop, empty table, 400,000 queued, 20 s window', 'jobs/s', []);
    if (spread(values(rounds, 'j.loop')))
      rate('j.loop', `(j) the same behind ${n} final jobs and ${fmt(GROWTH_TASKS)} periodic tasks`, 'jobs/s', [
        { key: 'j.base', label: 'empty table', min: 0.9 },
        { key: 'b.loop', label: 'b.loop' },
      ]);
    if (spread(values(rounds, 'j.hist')))
      rate('j.hist', `(j) the same behind the history alone (periodic tasks idle)`, 'jobs/s', [{ key: 'j.base', label: 'empty table' }]);
    if (spread(values(rounds, 'j.pbase'))) rate('j.pbase', '(j) README loop held to 2,000 jobs/s, empty table', 'jobs/s', []);
    if (spread(values(rounds, 'j.paced')))
      rate('j.paced', `(j) the same behind ${n} final jobs and ${fmt(GROWTH_TASKS)} periodic tasks`, 'jobs/s', [
        { key: 'j.pbase', label: 'empty table' },
      ]);
    for (const key of ['j.base', 'j.loop', 'j.hist', 'j.pbase', 'j.paced']) {
      const paced = key === 'j.pbase' || key === 'j.paced';
      const at = (name: string) => spread(values(rounds, key, (r) => r.extra?.[name] ?? Number.NaN));
      const p99 = at('leaseP99');
      if (!p99) continue;
      rows.push({
        measurement: `(j) … ${key === 'j.base' || key === 'j.pbase' ? 'empty table' : 'behind the history'}${paced ? ', 2,000 jobs/s' : ', saturated'}: lease latency`,
        result: `p50 ${fmt(at('leaseP50')!.median)} · p99 ${fmt(p99.median)} [${fmt(p99.min)}–${fmt(p99.max)}] ms`,
        ratio: '',
        target: paced ? 'p99 < 20 ms' : '',
        pass: paced ? passMark(p99.max < 20) : '', // every round, as the lateness row
      });
      const runs = at('periodicRuns');
      if (runs && runs.median > 0) {
        const late = at('latenessP99')!;
        const commit = at('latenessCommitP99')!;
        rows.push({
          measurement: '(j) … lateness of the periodic runs due in the window (created · committed − slot)',
          result: `p99 ${fmt(late.median)} · ${fmt(commit.median)} ms (max of rounds ${fmt(commit.max)}); ${fmt(runs.median)} runs`,
          ratio: '',
          target: 'p99 < 100 ms',
          pass: passMark(commit.max < 100 && late.max < 100),
        });
      }
      const vacuums = at('autovacuums');
      if (vacuums) {
        rows.push({
          measurement: `(j) … autovacuum of the job table in the window`,
          result:
            `${fmt(vacuums.median)} runs ended, ${fmt(at('autovacuumMs')!.median)} ms; a vacuum of it running in ` +
            `${fmt((at('vacuumBusyShare')?.median ?? Number.NaN) * 100)}% of the window`,
          ratio: '',
          target: '',
          pass: '',
        });
      }
      figures[`${key}.steady`] = {
        leaseP99: p99,
        latenessP99: at('latenessP99'),
        latenessCommitP99: at('latenessCommitP99'),
        autovacuums: vacuums,
        autovacuumMs: at('autovacuumMs'),
      };
    }
    if (spread(values(rounds, 'j.retention')))
      rate('j.retention', '(j) README loop while retention deletes 1 M expired jobs', 'jobs/s', [
        { key: 'j.base', label: 'the same loop alone (j.base)', min: 0.8 },
      ]);
    const deleted = spread(values(rounds, 'j.retention', (r) => r.extra?.expiredDeletedPerSec ?? Number.NaN));
    if (deleted) {
      rows.push({
        measurement: '(j) … expired jobs deleted meanwhile',
        result: `${fmtSpread(deleted, 'jobs/s')}`,
        ratio: '',
        target: '≥ 2,000 jobs/s',
        pass: passMark(deleted.median >= 2000),
      });
      figures['j.retention.deleted'] = deleted;
    }
    for (const [i, [name, path]] of GROWTH_READS.entries()) {
      const p50 = spread(values(rounds, 'j.reads', (r) => r.extra?.[`p50.${i}`] ?? Number.NaN));
      const p99 = spread(values(rounds, 'j.reads', (r) => r.extra?.[`p99.${i}`] ?? Number.NaN));
      if (!p50 || !p99) continue;
      const first = path.startsWith('/jobs?');
      rows.push({
        measurement: `(j) behind ${n} final jobs: ${first ? `GET /jobs first page by ${name}` : name}`,
        result: `p50 ${fmt(p50.median)} · p99 ${fmt(p99.max)} ms`,
        ratio: '',
        target: first ? 'p50 < 100 ms' : '',
        pass: first ? passMark(p50.median < 100) : '',
      });
      figures[`j.reads.${name}`] = { path, p50, p99 };
    }
  }
  {
    const at = (name: string) => spread(values(rounds, 'j.churn', (r) => r.extra?.[name] ?? Number.NaN));
    const jobs = at('jobs');
    const p99 = at('leaseP99');
    if (jobs && p99) {
      const p50 = at('leaseP50')!;
      rows.push({
        measurement: `(j) ${fmt(jobs.median / 1e6)} M jobs through the README loop: lease latency`,
        result: `${fmt(at('perSec')!.median)} jobs/s; lease p50 ${fmt(p50.median)} · p99 ${fmt(p99.median)} ms`,
        ratio: '',
        target: 'p99 < 20 ms',
        pass: passMark(p99.median < 20),
      });
      const sizes = HOT_INDEXES.map(
        (i) => `${i.replace(/^job_/, '')} ${fmt(at(`mb.${i}`)?.median ?? Number.NaN)} (${fmt(at(`mbRebuilt.${i}`)?.median ?? Number.NaN)})`,
      );
      rows.push({
        measurement: `(j) … hot index MB after it (rebuilt), autovacuum runs ${fmt(at('vacuums')?.median ?? Number.NaN)}`,
        result: sizes.join(', '),
        ratio: '',
        target: '',
        pass: '',
      });
    }
  }
  rate('b.perjob', '(b) jobclock: lease 100 + POST /jobs/{id}/finished each, 48 conns', 'jobs/s', [
    { key: 'c.pgboss12', label: 'pg-boss 12', min: 0.5 },
    { key: 'c.graphile018', label: 'graphile 0.18' },
  ]);
  rate('b.perjobmin', '(b) jobclock: the same with Prefer: return=minimal (204, no job back)', 'jobs/s', [
    { key: 'c.pgboss12', label: 'pg-boss 12', min: 0.35 },
    { key: 'b.perjob', label: 'per-job' },
  ]);
  rate('b.fresh', '(b) per-job /finished on a never-analyzed table, warmed up empty (2,000 jobs), grown to 62,000 rows', 'jobs/s', [
    { key: 'b.freshanalyzed', label: 'same after ANALYZE', min: 0.9 },
    { key: 'b.perjob', label: 'per-job' },
  ]);
  rate('b.freshanalyzed', '(b) the same with the grown table analyzed', 'jobs/s', [{ key: 'b.perjob', label: 'per-job' }]);
  rate('c.pgboss12', '(c) pg-boss 12: fetch 100 + complete(ids), 4 loops', 'jobs/s', [{ key: 'a.raw100', label: 'raw 100' }]);
  rate('c.pgboss12work', '(c) pg-boss 12: work() batchSize 100, localConcurrency 4, burst', 'jobs/s', [
    { key: 'c.pgboss12', label: 'fetch loop' },
  ]);
  rate('c.graphile018', '(c) graphile-worker 0.18: concurrency 50, localQueue 2000, completion batched 2 ms', 'jobs/s', [
    { key: 'a.raw100', label: 'raw 100' },
  ]);
  // Enqueue
  rate('d.post', '(d) POST /jobs, 8 clients', 'jobs/s', [{ key: 'd.pgboss12', label: 'pg-boss 12 send', min: 2 }]);
  rate('d.debounce', '(d) 100,000 POST /jobs with uniqueKey + debounce over 1,000 keys → 1,000 jobs, 8 clients', 'submissions/s', [
    { key: 'd.post', label: 'plain POST /jobs' },
  ]);
  rate('d.pgboss12', '(d) pg-boss 12 send(), 8 callers', 'jobs/s');
  rate('d.batch', '(d) POST /jobs/batch of 1000, 1 client', 'jobs/s', [
    { key: 'd.pgboss12ins', label: 'pg-boss 12 insert', min: 1.0 },
    { key: 'd.raw', label: 'raw INSERT' },
  ]);
  rate('d.pgboss12ins', '(d) pg-boss 12 insert() of 1000, 1 caller', 'jobs/s');
  rate('d.raw', '(d) raw multi-row INSERT of 1000, 1 conn', 'jobs/s');
  rate('d.sql', '(d) SELECT jobclock_add_jobs of 1000, 1 conn', 'jobs/s', [{ key: 'd.raw', label: 'raw INSERT', min: 0.5 }]);

  // Wake latency: percentiles over all samples of all rounds; the p50 ratio within each round.
  // The target is the hot-path work's (p50 within 1.5× the raw LISTEN/NOTIFY floor, p99 10 ms).
  const WAKE_TARGET = 'p50 ≤ 1.5× raw; p99 ≤ 10 ms';
  const latency = (key: string, label: string, vs?: string) => {
    const samples = rounds.flatMap((m) => {
      const r = m.get(key);
      return ok(r) ? (r.samples ?? []) : [];
    });
    if (samples.length === 0) {
      rows.push({
        measurement: label,
        result: reason(rounds, key),
        ratio: vs ? 'n/a' : '',
        target: vs ? WAKE_TARGET : '',
        pass: vs ? '—' : '',
      });
      figures[key] = { label, unit: 'ms', value: null };
      return;
    }
    const s = latencySummary(samples);
    const result = `p50 ${fmt(s.p50)} · p95 ${fmt(s.p95)} · p99 ${fmt(s.p99)} · max ${fmt(s.max)} ms (n=${s.n})${notes(rounds, key)}`;
    let ratio = '';
    let target = '';
    let pass = '';
    let r: Spread | null = null;
    if (vs) {
      r = spread(ratios(rounds, key, vs));
      ratio = r ? `p50 ${fmtSpread(r)}× raw` : 'n/a';
      target = WAKE_TARGET;
      pass = passMark(r ? r.median <= 1.5 && s.p99 <= 10 : null);
    }
    rows.push({ measurement: label, result, ratio, target, pass });
    figures[key] = { label, unit: 'ms', pooled: s, p50PerRound: spread(values(rounds, key)), ratioP50: r, pass: pass || undefined };
  };
  latency('e.jobclock', '(e) wake latency: INSERT → POST /jobs/next {wait} answers', 'e.raw');
  latency('e.raw', '(e) wake latency: INSERT → LISTEN client claims (raw floor)');

  // Idle waiters
  {
    const key = 'f.idle';
    const per = spread(values(rounds, key));
    const r0 = spread(values(rounds, key, (r) => r.extra?.perSecNoWaiters ?? Number.NaN));
    const r50 = spread(values(rounds, key, (r) => r.extra?.perSec50Waiters ?? Number.NaN));
    const label = `(f) DB statements/s (${statementSource}): no waiter → 50 idle long-polls`;
    if (per && r0 && r50) {
      rows.push({
        measurement: label,
        result: `${fmtSpread(r0)} → ${fmtSpread(r50)} /s${notes(rounds, key)}`,
        ratio: `+${fmtSpread(per)} /s per worker`,
        target: '≤ 0.05 /s per idle worker',
        pass: passMark(per.median <= 0.05),
      });
    } else rows.push({ measurement: label, result: reason(rounds, key), ratio: 'n/a', target: '≤ 0.05 /s per idle worker', pass: '—' });
    figures[key] = { label, perWorker: per, noWaiters: r0, waiters50: r50, pass: per ? per.median <= 0.05 : null };
  }

  // Scheduler
  rate('g.jobclock', '(g) 100k due tasks: PeriodicScheduler.tick submissions', 'jobs/s', [{ key: 'g.sql', label: 'SQL loop', min: 0.5 }]);
  rate('g.sql', '(g) 100k due tasks: plain multi-row INSERT loop, 1000/stmt', 'jobs/s');
  rate('g.fields', '(g) the same with maxAttempts, catchUpWindow, alertAfter, endAt on every task', 'jobs/s', [
    { key: 'g.jobclock', label: 'without them', min: 0.9 },
  ]);
  {
    const at = (name: string) => spread(values(rounds, 'l.ledger', (r) => r.extra?.[name] ?? Number.NaN));
    const p50 = at('p50');
    const p99 = at('p99');
    if (p50 && p99) {
      const newest = at('newestP50');
      rows.push({
        measurement: '(l) run ledger: a page of 100 of an every-minute task with a year of slots, anywhere in the year',
        result: `p50 ${fmt(p50.median)} · p99 ${fmt(p99.median)} [${fmt(p99.min)}–${fmt(p99.max)}] ms${newest ? ` (newest page p50 ${fmt(newest.median)} ms)` : ''}`,
        ratio: '',
        target: 'p50 < 50 ms',
        pass: passMark(p50.median < 50),
      });
      figures['l.ledger'] = { p50, p99, newest };
    } else
      rows.push({ measurement: '(l) run ledger page', result: reason(rounds, 'l.ledger'), ratio: 'n/a', target: 'p50 < 50 ms', pass: '—' });
  }
  // Dependencies: the join's wake-up after a fan-in, and a chain's links against plain jobs
  {
    const delay = spread(values(rounds, 'm.fanin'));
    const ratio = spread(values(rounds, 'm.fanin', (r) => r.extra?.ratio ?? Number.NaN));
    const dbMs = spread(values(rounds, 'm.fanin', (r) => r.extra?.dbMs ?? Number.NaN));
    const label = '(m) fan-in of 10,000: last page reported → the join leased (long-poll)';
    rows.push(
      delay
        ? {
            measurement: label,
            result: `${fmtSpread(delay)} ms (database clock, startedAt − last finishedAt: ${dbMs ? fmtSpread(dbMs) : 'n/a'} ms)${notes(rounds, 'm.fanin')}`,
            ratio: ratio ? `pages ${fmtSpread(ratio)}× pages nobody waits for` : '',
            target: '≤ 100 ms',
            pass: passMark(delay.median <= 100),
          }
        : { measurement: label, result: reason(rounds, 'm.fanin'), ratio: 'n/a', target: '≤ 100 ms', pass: '—' },
    );
    figures['m.fanin'] = { label, delay, dbMs, pagesRatio: ratio };
    const links = (key: string) =>
      latencySummary(
        rounds.flatMap((m) => {
          const r = m.get(key);
          return ok(r) ? (r.samples ?? []) : [];
        }),
      );
    const chain = links('m.chain');
    const plain = links('m.chainplain');
    const linkLabel = '(m) chain of 1,000, one worker: lease to lease per link';
    rows.push({
      measurement: linkLabel,
      result:
        chain.n > 0 ? `p50 ${fmt(chain.p50)} · p99 ${fmt(chain.p99)} · max ${fmt(chain.max)} ms (n=${chain.n})` : reason(rounds, 'm.chain'),
      ratio: chain.n > 0 && plain.n > 0 ? `p50 ${fmt(chain.p50 / plain.p50)}× · p99 ${fmt(chain.p99 / plain.p99)}× 1,000 plain jobs` : '',
      target: '',
      pass: '',
    });
    if (plain.n > 0) {
      rows.push({
        measurement: '(m) 1,000 jobs without dependencies, the same way',
        result: `p50 ${fmt(plain.p50)} · p99 ${fmt(plain.p99)} · max ${fmt(plain.max)} ms (n=${plain.n})`,
        ratio: '',
        target: '',
        pass: '',
      });
    }
    figures['m.chain'] = { label: linkLabel, chain, plain };
  }
  {
    const key = 'h.lateness';
    const r = lateness?.get(key);
    const label = '(h) lateness (job created − nextRun), tasks spread over the window';
    if (ok(r)) {
      const s = latencySummary(r.samples ?? []);
      const tasks = r.extra?.tasks ?? s.n;
      const windowS = (r.extra?.windowMs ?? 0) / 1000;
      rows.push({
        measurement: `${label} (${tasks} tasks / ${fmt(windowS)} s)`,
        result: `p50 ${fmt(s.p50)} · p99 ${fmt(s.p99)} · max ${fmt(s.max)} ms (min ${fmt(s.min)})${r.note ? ` (${r.note})` : ''}`,
        ratio: '',
        target: 'p99 ≤ 100 ms',
        pass: passMark(s.p99 <= 100 && !r.note),
      });
      figures[key] = { label, summary: s, extra: r.extra, note: r.note, pass: s.p99 <= 100 && !r.note };
      const e = r.extra ?? {};
      if ((e.committedN ?? 0) > 0) {
        const p99 = e.committedP99 ?? Number.NaN;
        rows.push({
          measurement: '(h) lateness (INSERT committed − nextRun), same run',
          result: `p50 ${fmt(e.committedP50 ?? Number.NaN)} · p99 ${fmt(p99)} · max ${fmt(e.committedMax ?? Number.NaN)} ms (min ${fmt(e.committedMin ?? Number.NaN)})`,
          ratio: '',
          target: 'p99 ≤ 100 ms',
          pass: passMark(p99 <= 100 && !r.note),
        });
        figures['h.committed'] = { label: 'lateness, commit time', p99, pass: p99 <= 100 && !r.note };
      }
    } else {
      rows.push({
        measurement: label,
        result: lateness ? reason([lateness], key) : 'n/a: skipped',
        ratio: '',
        target: 'p99 ≤ 100 ms',
        pass: '—',
      });
      figures[key] = { label, value: null };
    }
  }

  // Schedule engine
  if (scheduleNames.length === 0) {
    rows.push({
      measurement: '(i) schedule engine: next occurrences',
      result: reason(rounds, 'i.schedules'),
      ratio: '',
      target: '',
      pass: '',
    });
  }
  for (const name of scheduleNames) {
    const v = spread(values(rounds, 'i.schedules', (r) => r.extra?.[name] ?? Number.NaN));
    rows.push({ measurement: `(i) next occurrence: ${name}`, result: fmtSpread(v, 'ops/s'), ratio: '', target: '', pass: '' });
    figures[`i.${name}`] = { label: name, unit: 'ops/s', value: v };
  }
  return { rows, figures };
}

/** A Markdown table whose columns are padded, so it reads well in a terminal and in a README. */
export function renderMarkdown(head: string[], rows: string[][]): string {
  const widths = head.map((_, c) => Math.max(...[head, ...rows].map((r) => [...(r[c] ?? '')].length)));
  const line = (r: string[]) => `| ${widths.map((w, c) => (r[c] ?? '') + ' '.repeat(w - [...(r[c] ?? '')].length)).join(' | ')} |`;
  const rule = `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(head), rule, ...rows.map(line)].join('\n');
}

export function renderTable(rows: TableRow[]): string {
  const cols: (keyof TableRow)[] = ['measurement', 'result', 'ratio', 'target', 'pass'];
  return renderMarkdown(
    ['Measurement', 'Result: median [min–max]', 'Ratio (within round)', 'Target', 'Pass'],
    rows.map((r) => cols.map((c) => r[c])),
  );
}

const CPU_ROWS: [key: string, label: string][] = [
  ['a.raw1', '(a) raw SQL, 1 job/statement'],
  ['a.raw100', '(a) raw SQL, 100 jobs/statement'],
  ['a.lease100', "(a) jobclock's lease statement + raw finish"],
  ['a.slim100', '(a) lease without periodic machinery + raw finish'],
  ['b.loop', '(b) jobclock README loop (types + wait)'],
  ['b.types', '(b) jobclock, types alone'],
  ['b.wait', '(b) jobclock, wait alone'],
  ['b.reports', '(b) jobclock, neither'],
  ['b.perjob', '(b) jobclock: per-job /finished'],
  ['b.perjobmin', '(b) per-job, return=minimal'],
  ['b.fresh', '(b) per-job, never analyzed, grown'],
  ['b.freshanalyzed', '(b) per-job, grown, analyzed'],
  ['b.groups100', '(b) README loop over 100 groups'],
  ['b.groups100k', '(b) … over 100,000 groups'],
  ['b.seq1000', '(b) … 1,000 groups, groups default 1'],
  ['b.seq100k', '(b) … 100,000 groups, groups default 1'],
  ['c.pgboss12', '(c) pg-boss 12 fetch + complete'],
  ['c.pgboss12work', '(c) pg-boss 12 work()'],
  ['c.graphile018', '(c) graphile-worker 0.18'],
  ['d.post', '(d) POST /jobs ×8'],
  ['d.pgboss12', '(d) pg-boss 12 send() ×8'],
  ['d.batch', '(d) POST /jobs/batch'],
  ['d.pgboss12ins', '(d) pg-boss 12 insert() of 1000'],
  ['d.raw', '(d) raw multi-row INSERT'],
  ['d.sql', '(d) SELECT jobclock_add_jobs'],
];
const CPU_SIDES = ['main', 'jobclock', 'helpers', 'postgres', 'total'] as const;

/** The growth rows, whose PostgreSQL CPU is split by process below (vacuum runs there). */
const PG_CPU_ROWS: [key: string, label: string][] = [
  ...CPU_ROWS,
  ['j.base', '(j) README loop, empty table'],
  ['j.loop', '(j) … behind the history + periodic tasks'],
  ['j.hist', '(j) … behind the history alone'],
  ['j.retention', '(j) … while retention deletes'],
];
const PG_KINDS = ['backends', 'autovacuum', 'writers', 'other'] as const;

/**
 * PostgreSQL's CPU per job by kind of process (µs, median over rounds): the client backends that
 * run the statements, autovacuum workers, and the checkpointer, background writer and WAL writer.
 * Shown for the rows that have it; says whether a slower row pays in its statements or beside them.
 */
export function summarizePgCpu(rounds: RoundResults[]): string | null {
  const rows: string[][] = [];
  for (const [key, label] of PG_CPU_ROWS) {
    const kinds = PG_KINDS.map((k) => spread(values(rounds, key, (r) => r.extra?.[`cpu.pg.${k}`] ?? Number.NaN)));
    const total = spread(values(rounds, key, (r) => r.extra?.['cpu.total'] ?? Number.NaN));
    if (kinds.every((k) => k === null)) continue;
    rows.push([label, ...kinds.map((k) => (k ? `${fmt(k.median)} [${fmt(k.min)}–${fmt(k.max)}]` : '—')), total ? fmt(total.median) : '—']);
  }
  if (rows.length === 0) return null;
  return renderMarkdown(
    [
      'PostgreSQL CPU µs per job (median [min–max])',
      'client backends',
      'autovacuum',
      'checkpointer + writers',
      'other',
      'all sides, total',
    ],
    rows,
  );
}

/**
 * CPU time per job, by side (µs, median over rounds): steadier than throughput on a machine whose
 * neighbours steal time, and it says which side limits a row. `main` is the benchmark's thread: the
 * HTTP clients standing in for worker processes, or pg-boss / graphile-worker in-process.
 */
export function summarizeCpu(rounds: RoundResults[]): { table: string; figures: Record<string, Record<string, Spread | null>> } | null {
  const rows: string[][] = [];
  const figures: Record<string, Record<string, Spread | null>> = {};
  // PostgreSQL's CPU per job against the raw claim-100 loop on the same schema, within each round.
  const pgOf = (r: UnitResult) => r.extra?.['cpu.postgres'] ?? Number.NaN;
  for (const [key, label] of CPU_ROWS) {
    const sides = Object.fromEntries(
      CPU_SIDES.map((side) => [side, spread(values(rounds, key, (r) => r.extra?.[`cpu.${side}`] ?? Number.NaN))]),
    );
    if (!sides.total) continue;
    const pgShare = key === 'a.raw100' ? null : spread(ratios(rounds, key, 'a.raw100', pgOf));
    figures[key] = { ...sides, postgresVsRaw100: pgShare };
    rows.push([
      label,
      ...CPU_SIDES.map((side) => (sides[side] ? fmt(sides[side].median) : '—')),
      pgShare ? `${fmt(pgShare.median)}×` : '—',
    ]);
  }
  if (rows.length === 0) return null;
  const head = [
    'CPU µs per job (median)',
    'bench thread (clients / library)',
    'jobclock thread',
    'other node threads',
    'PostgreSQL',
    'total',
    'PostgreSQL ÷ raw 100 (within round)',
  ];
  return { table: renderMarkdown(head, rows), figures };
}
