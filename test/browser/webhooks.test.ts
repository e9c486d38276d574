import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jobDto } from '../../src/http/schemas/jobs.js';
import { DeliveryEngine } from '../../src/scheduler/delivery-engine.js';
import type { TestStack } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { startReceiver, type Receiver } from '../http/webhooks-support.js';
import { callApi, CHROMIUM, launch, open, screenshot } from './support.js';

let stack: TestStack;
useTestStack({}, (f) => ({ stack } = f));

let base = '';
let browser: Browser;
let page: Page;
let up: Receiver;
let down: Receiver;

const call = (method: string, path: string, body?: unknown) => callApi(base, method, path, body);

describe.skipIf(!CHROMIUM)('webhooks and their deliveries in the console', () => {
  let healthy: string;
  let failing: string;

  beforeAll(async () => {
    base = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    up = await startReceiver();
    down = await startReceiver();
    down.answer = () => ({ status: 503, body: 'maintenance' });
    healthy = (await call('POST', '/webhooks', { url: up.url, events: ['job.finished'] })).id;
    failing = (await call('POST', '/webhooks', { url: down.url, events: ['job.finished', 'job.failed'], filter: { type: 'ui.hook' } })).id;
    for (let i = 0; i < 2; i++) {
      await call('POST', '/jobs', { type: 'ui.hook' });
      const { jobs } = await call('POST', '/jobs/next', { worker: 'w', types: ['ui.hook'] });
      await call('POST', `/jobs/${jobs[0].id}/finished`, { leaseToken: jobs[0].leaseToken });
    }
    // one pass sends each delivery once: the healthy receiver's are delivered, the other's wait for a retry
    const engine = new DeliveryEngine(stack.ctx, { renderJob: jobDto, random: () => 0.5 });
    await engine.tick(new Date());
    await engine.stop();
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
  });
  afterAll(async () => {
    await browser?.close();
    await up?.close();
    await down?.close();
  });

  it('lists each webhook with its recent deliveries: status, attempts and the last answer', async () => {
    await open(page, base, '#/webhooks');
    const ok = page.locator(`section[data-webhook="${healthy}"]`);
    expect(await ok.locator('h2').innerText()).toContain(up.url);
    expect(await ok.locator('tr[data-delivery]').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-status')))).toEqual([
      'delivered',
      'delivered',
    ]);
    expect(await ok.locator('tr[data-delivery]').first().innerText()).toContain('200');

    const bad = page.locator(`section[data-webhook="${failing}"]`);
    expect(await bad.innerText()).toContain('type ui.hook');
    const rows = bad.locator('tr[data-delivery]');
    expect(await rows.count()).toBe(2);
    const first = await rows.first().innerText();
    expect(first).toContain('pending');
    expect(first).toContain('503');
    expect(first).toContain('maintenance');
    expect(await rows.first().locator('td.num').innerText()).toBe('1');
    expect(await page.locator('nav a.current').innerText()).toBe('Webhooks');
    await screenshot(page, 'webhooks');
  });
});
