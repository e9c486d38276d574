import { describe, expect, it } from 'vitest';
import { PUSH_RETRY_AFTER_MAX_MS, pushOutcome, retryAfterMs } from '../../src/domain/push.js';

const now = new Date('2026-11-20T00:00:00.000Z');
const answer = (statusCode: number | null, more: Partial<Parameters<typeof pushOutcome>[0]> = {}) =>
  pushOutcome(
    { statusCode, retryAfter: undefined, body: null, truncated: false, error: statusCode === null ? 'ECONNREFUSED' : null, ...more },
    now,
  );

describe('pushOutcome', () => {
  it('finishes on 2xx with a JSON body as the result, none for other bodies', () => {
    expect(answer(200, { body: '{"a":1}' })).toEqual({ kind: 'finished', result: { a: 1 } });
    expect(answer(201, { body: 'plain text' })).toEqual({ kind: 'finished', result: null });
    expect(answer(200, { body: '{"a":', truncated: true })).toEqual({ kind: 'finished', result: null });
    expect(answer(204, { body: '' })).toEqual({ kind: 'finished', result: null });
  });

  it('leaves a 202 running', () => {
    expect(answer(202, { body: '{"a":1}' })).toEqual({ kind: 'running' });
  });

  it('fails with that retryIn on 429 and 503 with Retry-After; without, they fail with the backoff', () => {
    expect(answer(429, { retryAfter: '30' })).toMatchObject({ kind: 'failed', final: false, retryInMs: 30_000 });
    expect(answer(503, { retryAfter: 'Fri, 20 Nov 2026 00:01:00 GMT' })).toMatchObject({ kind: 'failed', final: false, retryInMs: 60_000 });
    expect(answer(429, { error: 'HTTP 429' })).toMatchObject({ kind: 'failed', final: false });
    expect(answer(503, { retryAfter: 'soon', error: 'HTTP 503' })).toMatchObject({ kind: 'failed', final: false });
  });

  it('fails other 4xx for good, and 5xx, 3xx and no answer with retries', () => {
    expect(answer(404, { error: 'HTTP 404' })).toEqual({ kind: 'failed', final: true, error: { message: 'HTTP 404', statusCode: 404 } });
    expect(answer(400)).toMatchObject({ kind: 'failed', final: true });
    for (const code of [500, 502, 503, 302, null]) expect(answer(code)).toMatchObject({ kind: 'failed', final: false });
    expect(answer(null)).toEqual({ kind: 'failed', final: false, error: { message: 'ECONNREFUSED', statusCode: null } });
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates, bounded to [0, 24 h]', () => {
    expect(retryAfterMs(undefined, now)).toBeNull();
    expect(retryAfterMs(' 5 ', now)).toBe(5_000);
    expect(retryAfterMs('Thu, 19 Nov 2026 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs('999999999', now)).toBe(PUSH_RETRY_AFTER_MAX_MS);
    expect(retryAfterMs('-5', now)).toBeNull();
  });
});
