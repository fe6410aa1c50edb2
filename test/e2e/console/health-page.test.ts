import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type { Browser, Page } from 'playwright-core';
import {
  accessibilityViolations,
  DESKTOP,
  launchBrowser,
  login,
  noProblems,
  openConsole,
  PHONE,
  shot,
} from '../../helpers/console.js';
import { dispose, programDir, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { FIXTURE_FRPC, instanceSettings } from '../../helpers/instances.js';

/**
 * The self-check in a real browser against a real daemon that listens beyond loopback (plain HTTP there: the
 * exposure check warns) and whose tunnel client is taken away and put back (the tunnel checks fail, then pass).
 */

let browser: Browser;
let daemon: Daemon;
let root: string;
let programs: string;
let frpc: string;

test.before(async () => {
  programs = await programDir();
  frpc = join(programs, 'frpc');
  await symlink(FIXTURE_FRPC, frpc);
  [browser, daemon] = await Promise.all([
    launchBrowser(),
    startDaemon({ settingsToml: instanceSettings({}, frpc), args: ['--host', '0.0.0.0'] }),
  ]);
  root = await daemon.login();
});

test.after.always(async () => {
  await browser?.close();
  if (daemon) await dispose(daemon);
  if (programs) await rm(programs, { recursive: true, force: true });
});

const open = (t: ExecutionContext, viewport = DESKTOP): Promise<Page> => openConsole(t, browser, daemon, viewport);

/** The header's indicator: a link to the Health page while a check warns or fails. */
const indicator = (page: Page) => page.getByRole('banner').getByRole('link', { name: /^Self-check:/ });

const result = (page: Page, check: string) => page.locator(`tr[data-check="${check}"] td[data-label="Result"]`);

test.serial('a warning: said in the header as text, listed on the Health page with what was found', async (t) => {
  const page = await open(t);
  await login(page);
  await indicator(page).waitFor();
  t.is((await indicator(page).innerText()).trim(), '! Self-check: 1 warned');
  await indicator(page).click();
  await page.getByRole('heading', { name: 'Health', exact: true }).waitFor();
  t.is(
    await page
      .getByRole('navigation', { name: 'Pages' })
      .getByRole('link', { name: 'Health' })
      .getAttribute('aria-current'),
    'page',
  );
  t.is((await result(page, 'exposure').innerText()).trim(), '! warn');
  t.regex(await page.locator('tr[data-check="exposure"] td[data-label="Found"]').innerText(), /plain HTTP/);
  t.is((await result(page, 'tunnelVersion').innerText()).trim(), '✓ ok');
  t.is(await page.locator('tr[data-check]').first().getAttribute('data-check'), 'exposure', 'problems first');
  await page.getByText(/^1 warned, 13 ok/).waitFor();
  noProblems(t, page);
});

test.serial('a failure appears on a re-run, and goes once fixed; the header follows', async (t) => {
  const page = await open(t);
  await login(page);
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Health' }).click();
  await page.getByText(/^1 warned, 13 ok/).waitFor();

  await rm(frpc);
  const rerun = page.getByRole('button', { name: 'Run the self-check again' });
  const asked = page.waitForResponse((res) => res.url().endsWith('/system/selfCheck'));
  await rerun.click();
  await asked;
  await page.getByRole('status').filter({ hasText: 'Self-check run again: 2 failed, 1 warned.' }).waitFor();
  t.is((await result(page, 'tunnelPath').innerText()).trim(), '✕ fail');
  t.is((await result(page, 'tunnelVersion').innerText()).trim(), '✕ fail');
  t.regex(
    await page.locator('tr[data-check="tunnelPath"] td[data-label="Found"]').innerText(),
    /is missing or not an executable file/,
  );
  t.deepEqual(
    await page
      .locator('tr[data-check]')
      .evaluateAll((rows) => rows.slice(0, 3).map((r) => r.getAttribute('data-check'))),
    ['tunnelPath', 'tunnelVersion', 'exposure'],
  );
  t.is((await indicator(page).innerText()).trim(), '✕ Self-check: 2 failed, 1 warned');
  await shot(page, 'health-desktop');
  t.deepEqual(await accessibilityViolations(page), [], 'health at desktop width');

  const phone = await open(t, PHONE);
  await login(phone);
  await indicator(phone).click();
  await phone.getByRole('heading', { name: 'Health', exact: true }).waitFor();
  await phone.locator('tr[data-check="tunnelPath"]').waitFor();
  await shot(phone, 'health-phone');
  t.deepEqual(await accessibilityViolations(phone), [], 'health at phone width');
  const width = (await phone.evaluate('document.documentElement.scrollWidth')) as number;
  t.true(width <= PHONE.width, `fits ${PHONE.width} px (${width})`);
  noProblems(t, phone);

  await symlink(FIXTURE_FRPC, frpc);
  await rerun.click();
  await page.getByRole('status').filter({ hasText: 'Self-check run again: 1 warned.' }).waitFor();
  t.is((await result(page, 'tunnelPath').innerText()).trim(), '✓ ok');
  t.is((await indicator(page).innerText()).trim(), '! Self-check: 1 warned');
  noProblems(t, page);
});

test.serial(
  'a visitor sees no indicator and no Health page, and its console never asks for the self-check',
  async (t) => {
    await daemon.userWithToken(root, 'viewer', 'visitor');
    const page = await open(t);
    const asked: string[] = [];
    page.on('request', (req) => {
      if (req.url().includes('/system/selfCheck')) asked.push(req.url());
    });
    await login(page, 'viewer', 'Passw0rd!x');
    const nav = page.getByRole('navigation', { name: 'Pages' });
    t.deepEqual(await nav.getByRole('link').allTextContents(), ['Instances', 'API keys', 'System log']);
    await page.goto(daemon.url + '/#/health');
    await page.getByRole('heading', { name: 'Not available' }).waitFor();
    t.is(await indicator(page).count(), 0);
    t.is(await page.getByRole('banner').getByRole('status').count(), 0);
    t.deepEqual(asked, []);
    noProblems(t, page);
  },
);
