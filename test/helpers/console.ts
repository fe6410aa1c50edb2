import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { chromium, type Browser, type Page } from 'playwright-core';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { ADMIN, type Daemon } from './daemon.js';

/** The web console in a real browser: Debian's Chromium, driven by playwright-core. */

const CHROMIUM = process.env.TUNNELWARD_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = join(PACKAGE_ROOT, 'test', 'artifacts', 'screenshots');
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function launchBrowser(): Promise<Browser> {
  await mkdir(SHOTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: process.getuid?.() === 0 ? ['--no-sandbox'] : [] });
}

/** Uncaught errors and Content-Security-Policy refusals seen by a page. */
const problems = new WeakMap<Page, string[]>();

/** A fresh tab (a new context: no storage) on the daemon's console (or another of its pages), closed at the end of the test. */
export async function openConsole(
  t: ExecutionContext,
  browser: Browser,
  daemon: Daemon,
  viewport = DESKTOP,
  path = '/',
): Promise<Page> {
  const context = await browser.newContext({ viewport });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const seen: string[] = [];
  problems.set(page, seen);
  page.on('pageerror', (err) => seen.push(`page error: ${err.message}`));
  page.on('console', (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) seen.push(`console: ${message.text()}`);
  });
  await page.goto(daemon.url + path);
  return page;
}

export async function login(page: Page, username = ADMIN.username, passwd = ADMIN.passwd): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(passwd);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Instances', exact: true }).waitFor();
}

/** axe-core's rules for WCAG 2 A and AA: what an automated check can say of labels, contrast, roles and names. */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
export async function accessibilityViolations(page: Page): Promise<string[]> {
  // Evaluated by the browser's debugger protocol, which the page's Content-Security-Policy does not govern.
  await page.evaluate(await readFile(AXE, 'utf8'));
  const found = (await page.evaluate(
    `axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
      .then((r) => r.violations.map((v) => v.id + ' (' + v.impact + '): ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`,
  )) as string[];
  return found;
}

export const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

export const noProblems = (t: ExecutionContext, page: Page) =>
  t.deepEqual(problems.get(page), [], 'no page error, no CSP refusal');

/** Chooses an item of an instance row's Actions menu. */
export async function rowAction(page: Page, instance: string, item: string): Promise<void> {
  await page.getByRole('button', { name: `Actions for ${instance}`, exact: true }).click();
  await page
    .getByRole('menu', { name: `Actions for ${instance}` })
    .getByRole('menuitem', { name: item, exact: true })
    .click();
}
