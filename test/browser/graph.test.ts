/** The console draws a job's dependency graph on its page (SVG), with states, linked to each job. */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestStack } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { callApi, CHROMIUM_TOOL, launch, open, screenshot } from './support.js';

let stack: TestStack;
useTestStack({}, (f) => ({ stack } = f));

let base = '';
let browser: Browser;
let page: Page;

const call = (method: string, path: string, body?: unknown): Promise<any> => callApi(base, method, path, body);

describe.skipIf(CHROMIUM_TOOL.skip)('the console, a job in a graph', () => {
  let ids: string[] = [];
  beforeAll(async () => {
    if (!CHROMIUM_TOOL.found) return;
    base = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    const { jobs } = await call('POST', '/jobs/batch', {
      jobs: [
        { type: 'pdf.render', ref: 'p1', args: { page: 1 } },
        { type: 'pdf.render', ref: 'p2', args: { page: 2 } },
        { type: 'pdf.render', ref: 'p3', args: { page: 3 } },
        { type: 'pdf.merge', ref: 'merge', after: ['p1', 'p2', 'p3'] },
        { type: 'mail.send', after: ['merge'] },
        { type: 'pdf.cleanup', after: ['merge'], onDependencyFailure: 'run' },
      ],
    });
    ids = jobs.map((j: { id: string }) => j.id);
    const { jobs: leased } = await call('POST', '/jobs/next', { worker: 'w', types: ['pdf.render'], limit: 2 });
    await call('POST', `/jobs/${leased[0].id}/finished`, { leaseToken: leased[0].leaseToken, result: { url: 's3://p1' } });
    browser = await launch();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  });
  beforeEach(() => CHROMIUM_TOOL.assert());
  afterAll(async () => {
    await browser?.close();
  });

  it('draws the jobs it runs after and those after it, each with its state, and follows a link', async () => {
    await open(page, base, `#/jobs/${ids[3]}`);
    await expect.poll(() => page.textContent('#job-state')).toBe('waiting');
    const nodes = await page.$$eval('#job-graph a.graph-node', (as) =>
      as.map((a) => ({
        id: a.getAttribute('data-id'),
        state: a.querySelector('text.state')?.textContent,
        cls: a.querySelector('rect')?.getAttribute('class'),
      })),
    );
    expect(nodes.map((n) => `${n.id}:${n.state}`)).toEqual([
      `${ids[0]}:finished`,
      `${ids[1]}:running`,
      `${ids[2]}:queued`,
      `${ids[4]}:waiting`,
      `${ids[5]}:waiting`,
    ]);
    expect(nodes[0]!.cls).toContain('finished');
    expect(await page.$$eval('#job-graph line.edge', (ls) => ls.length)).toBe(5);
    await screenshot(page, 'job-graph');
    await page.click(`#job-graph a[data-id="${ids[4]}"]`);
    await page.waitForFunction(`document.body.dataset.rendered === ${JSON.stringify(`#/jobs/${ids[4]}`)}`);
    expect(await page.$$eval('#job-graph a.graph-node', (as) => as.map((a) => a.getAttribute('data-id')))).toEqual([ids[3]]);
  });

  it('draws no graph for a job outside any', async () => {
    const job = await call('POST', '/jobs', { type: 'lonely' });
    await open(page, base, `#/jobs/${job.id}`);
    expect(await page.$('#job-graph')).toBeNull();
  });
});
