/**
 * Browser tests drive Debian's chromium (or CHROMIUM_PATH) with playwright-core. When no chromium
 * can be found the files skip with a message saying so (under CI=true they fail instead).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { requireTool } from '../support/tools.js';

function findChromium(): string | null {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];
  for (const c of candidates) if (c && existsSync(c)) return c;
  try {
    const found = execFileSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' }).trim();
    return found || null;
  } catch {
    return null;
  }
}

export const CHROMIUM = findChromium();
/** `describe.skipIf(CHROMIUM_TOOL.skip)`: skips without chromium, but not under CI=true. */
export const CHROMIUM_TOOL = requireTool(
  'chromium',
  CHROMIUM !== null,
  'test/browser found none (apt-get install -y chromium, or set CHROMIUM_PATH)',
);

export const SCREENSHOTS = join(import.meta.dirname, 'screenshots');

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Opens a console route (`#/jobs?state=failed`) and waits until the page has rendered its data. */
export async function open(page: Page, base: string, hash: string): Promise<void> {
  const url = `${base}/ui${hash}`;
  if (page.url() === url) {
    await page.reload();
  } else if (page.url().startsWith(`${base}/ui`)) {
    await page.evaluate(`document.body.removeAttribute('data-ready'); location.hash = ${JSON.stringify(hash)};`);
  } else {
    await page.goto(url);
  }
  // A render started before the hash changed (say, after an action) may finish first: wait for the
  // render of this page, not any render.
  await page.waitForFunction(`document.body.dataset.ready === 'true' && document.body.dataset.rendered === ${JSON.stringify(hash)}`);
}

/** Waits for the page to render again after an action. */
export async function settled(page: Page): Promise<void> {
  await page.waitForSelector('body[data-ready="true"]');
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}
