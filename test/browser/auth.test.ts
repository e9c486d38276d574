import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { TestStack } from '../support/app.js';
import { bearer, TOKENS } from '../support/app.js';
import { useTestStack } from '../support/fixture.js';
import { CHROMIUM_TOOL, launch, settled } from './support.js';

let stack: TestStack;
useTestStack({ tokens: TOKENS }, (f) => ({ stack } = f));

let base = '';
let browser: Browser;
const tokenOf = (role: string) => TOKENS.find((t) => t.role === role)!.token;

describe.skipIf(CHROMIUM_TOOL.skip)('the console with tokens configured', () => {
  beforeAll(async () => {
    if (!CHROMIUM_TOOL.found) return; // under CI=true each test fails in beforeEach instead
    base = await stack.app.listen({ host: '127.0.0.1', port: 0 });
    const res = await fetch(`${base}/jobs`, {
      method: 'POST',
      headers: { authorization: bearer('admin'), 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'mail.send' }),
    });
    expect(res.status).toBe(201);
    browser = await launch();
  });
  beforeEach(() => CHROMIUM_TOOL.assert());
  afterAll(async () => {
    await browser?.close();
  });

  it('serves the page and its files without a token', async () => {
    for (const path of ['/ui', '/ui/app.js', '/ui/api.js', '/ui/style.css']) expect((await fetch(base + path)).status).toBe(200);
    expect((await fetch(`${base}/types`)).status).toBe(401);
  });

  it('asks for a token, keeps it for the tab only, and shows a reader the 403 of an action', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${base}/ui#/`);
    await settled(page);
    expect(await page.locator('#token-form').count()).toBe(1);

    // a wrong token is refused and asked again
    await page.fill('input[name=token]', 'not-a-token');
    await page.click('#token-form button');
    await page.waitForSelector('text=The token was not accepted');

    await page.fill('input[name=token]', tokenOf('reader'));
    await page.click('#token-form button');
    await page.waitForSelector('#types tr[data-type="mail.send"]');
    expect(await page.evaluate('sessionStorage.getItem("jobclock.token")')).toBe(tokenOf('reader'));
    expect(await page.evaluate('localStorage.length')).toBe(0);

    await page.click('#types tr[data-type="mail.send"] button[data-action="pause"]');
    await page.waitForSelector('#notice.error');
    const text = await page.locator('#notice').innerText();
    expect(text).toContain('Not allowed (403)');
    expect(text).toContain('The reader role may not do this; it needs one of: admin.');
    const type: any = await (await fetch(`${base}/types/mail.send`, { headers: { authorization: bearer('admin') } })).json();
    expect(type.paused).toBe(false);

    // another tab asks again
    const other = await context.newPage();
    await other.goto(`${base}/ui#/jobs`);
    await settled(other);
    expect(await other.locator('#token-form').count()).toBe(1);

    // an admin token acts; "forget" drops the token
    await page.click('button[data-action="forget-token"]');
    await page.waitForSelector('#token-form');
    await page.fill('input[name=token]', tokenOf('admin'));
    await page.click('#token-form button');
    await page.click('#types tr[data-type="mail.send"] button[data-action="pause"]');
    await page.waitForSelector('#types tr[data-type="mail.send"] .badge.paused');
    await context.close();
  });
});
