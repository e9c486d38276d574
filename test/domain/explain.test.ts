import { describe, expect, it } from 'vitest';
import { explainJob, explainWaiting, type PolicyFacts } from '../../src/domain/explain.js';
import type { Job } from '../../src/domain/job.js';

const NOW = new Date('2026-11-20T09:00:00.000Z');
const job = (over: Partial<Job> = {}): Job => ({
  id: '7',
  type: 'mail.send',
  group: 'customer:1',
  args: null,
  subject: null,
  submitter: null,
  priority: 0,
  state: 'queued',
  runAt: new Date('2026-11-20T08:59:00.000Z'),
  attempts: 0,
  maxAttempts: 3,
  uniqueKey: null,
  periodicTaskId: null,
  scheduledAt: null,
  timebox: null,
  worker: null,
  startedAt: null,
  leaseExpiresAt: null,
  deadline: null,
  finishedAt: null,
  progress: null,
  result: null,
  error: null,
  createdAt: new Date('2026-11-20T08:59:00.000Z'),
  updatedAt: new Date('2026-11-20T08:59:00.000Z'),
  traceparent: null,
  checkpoint: null,
  startBy: null,
  after: [],
  onDependencyFailure: 'cancel',
  ...over,
});
const policy = (over: Partial<PolicyFacts>): PolicyFacts => ({
  kind: 'type',
  name: 'mail.send',
  paused: false,
  concurrency: null,
  running: 0,
  freeSlots: 0,
  rate: null,
  freeTokens: 0,
  nextTokenAt: null,
  ...over,
});
const none = { count: 0, capped: false };

describe('explainJob: why a job is not running', () => {
  const cases: {
    name: string;
    job: Job;
    policies?: PolicyFacts[];
    ahead?: { count: number; capped: boolean };
    codes: string[];
    runnable: boolean;
    detail?: RegExp;
  }[] = [
    {
      name: 'runnable, nothing ahead',
      job: job(),
      codes: ['waiting-for-worker'],
      runnable: true,
      detail: /^It is runnable\. 0 runnable jobs come before it/,
    },
    {
      name: 'runnable, one ahead',
      job: job(),
      ahead: { count: 1, capped: false },
      codes: ['waiting-for-worker'],
      runnable: true,
      detail: /1 runnable job comes before it/,
    },
    {
      name: 'runnable, past the cap',
      job: job(),
      ahead: { count: 10_000, capped: true },
      codes: ['waiting-for-worker'],
      runnable: true,
      detail: /More than 10000 runnable jobs come/,
    },
    {
      name: 'scheduled for later',
      job: job({ runAt: new Date('2026-11-20T10:00:00.000Z') }),
      codes: ['scheduled'],
      runnable: false,
      detail: /in 1h/,
    },
    {
      name: 'in retry backoff',
      job: job({ attempts: 2, runAt: new Date('2026-11-20T09:00:30.000Z') }),
      codes: ['retry-backoff'],
      runnable: false,
      detail: /Attempt 2 failed.*in 30s/,
    },
    {
      name: 'type and group paused',
      job: job(),
      policies: [policy({ paused: true }), policy({ kind: 'group', name: 'customer:1', paused: true })],
      codes: ['type-paused', 'group-paused'],
      runnable: false,
    },
    {
      name: 'type at its concurrency',
      job: job(),
      policies: [policy({ concurrency: 2, running: 2 })],
      codes: ['type-at-concurrency'],
      runnable: false,
      detail: /2 of 2 running/,
    },
    {
      name: 'a limit with room is no reason',
      job: job(),
      policies: [policy({ concurrency: 2, running: 1, freeSlots: 1 })],
      codes: ['waiting-for-worker'],
      runnable: true,
    },
    {
      name: 'group over its rate',
      job: job(),
      policies: [
        policy({
          kind: 'group',
          name: 'customer:1',
          rate: { limit: 100, windowMs: 60_000 },
          nextTokenAt: new Date('2026-11-20T09:00:12.000Z'),
        }),
      ],
      codes: ['group-rate-limited'],
      runnable: false,
      detail: /100\/1m.*2026-11-20T09:00:12.000Z/,
    },
    {
      name: 'later and paused: both reasons',
      job: job({ runAt: new Date('2026-11-20T10:00:00.000Z') }),
      policies: [policy({ paused: true })],
      codes: ['scheduled', 'type-paused'],
      runnable: false,
    },
    {
      name: 'running',
      job: job({ state: 'running', worker: 'w1', startedAt: NOW }),
      codes: ['running'],
      runnable: false,
      detail: /leased by w1/,
    },
    { name: 'final', job: job({ state: 'failed' }), codes: ['final'], runnable: false, detail: /retry/ },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const e = explainJob(c.job, c.policies ?? [], c.ahead ?? none, NOW);
      expect(e.reasons.map((r) => r.code)).toEqual(c.codes);
      expect(e.runnable).toBe(c.runnable);
      if (c.detail) expect(e.reasons[0]!.detail).toMatch(c.detail);
    });
  }
});

describe('explainWaiting', () => {
  it('names the dependencies that have not ended, twenty at most, and what a failure does', () => {
    const open = Array.from({ length: 25 }, (_, i) => ({ id: String(100 + i), type: 'page', state: 'queued' as const }));
    const e = explainWaiting(job({ state: 'waiting', after: open.map((d) => d.id).concat('99') }), open);
    expect(e.runnable).toBe(false);
    expect(e.reasons).toHaveLength(1);
    expect(e.reasons[0]!.code).toBe('waiting-for-dependencies');
    expect(e.reasons[0]!.detail).toMatch(/^It runs after 26 jobs; not ended yet: 100 \(page, queued\), 101 /);
    expect(e.reasons[0]!.detail).toContain('119 (page, queued) and 5 more.');
    expect(e.reasons[0]!.detail).toContain('cancelled if one of them ends failed');
    const run = explainWaiting(job({ state: 'waiting', after: ['1'], onDependencyFailure: 'run' }), [
      { id: '1', type: 't', state: 'running' },
    ]);
    expect(run.reasons[0]!.detail).toBe(
      'It runs after 1 job; not ended yet: 1 (t, running). It runs once all of them have ended, however they end.',
    );
  });
});
