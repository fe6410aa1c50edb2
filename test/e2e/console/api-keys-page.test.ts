import test, { type ExecutionContext } from 'ava';
import type { Browser, Locator, Page } from 'playwright-core';
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
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { instanceSettings } from '../../helpers/instances.js';

/**
 * The API keys page in a real browser against a real daemon: a key listed, created (shown once, copied), used,
 * revoked; a superuser's keys for another user; what the page refuses before the daemon does and what it shows
 * when the daemon refuses.
 */

let browser: Browser;
let daemon: Daemon;
let root: string;

test.before(async () => {
  [browser, daemon] = await Promise.all([launchBrowser(), startDaemon({ settingsToml: instanceSettings() })]);
  root = await daemon.login();
  await daemon.userWithToken(root, 'ops', 'admin');
  await daemon.userWithToken(root, 'viewer', 'visitor');
});

test.after.always(async () => {
  await browser?.close();
  if (daemon) await dispose(daemon);
});

const open = (t: ExecutionContext, viewport = DESKTOP): Promise<Page> => openConsole(t, browser, daemon, viewport);

async function keysPage(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'API keys' }).click();
  await page.getByRole('heading', { name: 'API keys', exact: true }).waitFor();
}

const whoamiWith = (key: string) => daemon.get('/whoami', { headers: { Authorization: `Bearer ${key}` } });

/** Whether the browser's storage (this origin's localStorage and sessionStorage) holds `text`. */
const storageHolds = (page: Page, text: string) =>
  page.evaluate(
    `[localStorage, sessionStorage].some((s) => Object.keys(s).some((k) => (k + s.getItem(k)).includes(${JSON.stringify(text)})))`,
  ) as Promise<boolean>;

/** Whether the page holds `text` anywhere a key could be left: its HTML, the values of its fields, its storage. */
async function pageHolds(page: Page, text: string): Promise<boolean> {
  const inPage = (await page.evaluate(
    `[document.documentElement.outerHTML, ...[...document.querySelectorAll('input, textarea')].map((el) => el.value)]
      .some((s) => s.includes(${JSON.stringify(text)}))`,
  )) as boolean;
  return inPage || (await storageHolds(page, text));
}

test.serial(
  'an admin creates a key: shown once with a copy button, it works, then revoked after a confirm',
  async (t) => {
    const page = await open(t);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: daemon.url });
    await login(page, 'ops', 'Passw0rd!x');
    await keysPage(page);
    await page.getByText('You have no API keys.').waitFor();

    await page.getByRole('button', { name: 'New API key' }).click();
    const form = page.getByRole('dialog', { name: 'New API key' });
    t.deepEqual(await roleOptions(form), ['admin', 'visitor (read-only)'], 'no role above the creator’s');
    t.is(await form.getByLabel('Owner').count(), 0, 'only a superuser picks the owner');
    await form.getByLabel('Name').fill('ci job');
    await form.getByText('1 to 64 letters, digits, "_", "." or "-".').waitFor();
    await form.getByLabel('Name').fill('ci');
    await form.getByLabel('Role').selectOption('visitor');
    await form.getByLabel('Expires after').fill('30');
    await form.getByLabel('Requests a minute').fill('lots');
    await form.getByText('A whole number.').waitFor();
    t.deepEqual(await accessibilityViolations(page), [], 'the form');
    // More than the per-token limit: the daemon refuses it, and says why in the dialog.
    await form.getByLabel('Requests a minute').fill('200000');
    await form.getByRole('button', { name: 'Create key' }).click();
    await form
      .getByRole('alert')
      .filter({ hasText: /ratePerMinute above the per-token limit .* needs a superuser/ })
      .waitFor();
    await form.getByLabel('Requests a minute').fill('50');
    const created = page.waitForResponse((res) => res.url().endsWith('/apiKeyMgr/create'));
    await form.getByRole('button', { name: 'Create key' }).click();
    t.true((await (await created).json()).success);

    const shown = page.getByRole('dialog', { name: 'API key ci created' });
    await shown.waitFor();
    await shown.getByText('Copy it now: you will not see it again.').waitFor();
    const key = await shown.getByLabel('The key').inputValue();
    t.regex(key, /^twk_[0-9a-f]{16}_\S+$/);
    t.regex(
      await shown.getByText(/^For ops, role visitor, scope all, 50 requests a minute; it expires \d{4}-/).innerText(),
      /ops/,
    );
    await shown.getByRole('button', { name: 'Copy' }).click();
    await shown.getByRole('status').filter({ hasText: 'Copied to the clipboard.' }).waitFor();
    t.is(await page.evaluate('navigator.clipboard.readText()'), key);
    t.deepEqual(await accessibilityViolations(page), [], 'the key dialog');
    await shot(page, 'api-key-created-desktop');
    t.false(await storageHolds(page, key), 'not stored while shown either');

    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    t.false(await pageHolds(page, key), 'gone from the page once the dialog closed');
    t.false(await pageHolds(page, key.slice(21)), 'not even its secret part');

    // It works, as its owner with the role it was given; the list shows its use.
    const used = await whoamiWith(key);
    t.like(used.body.data, { username: 'ops', type: 'visitor', keyName: 'ci' });
    const row = page.locator('tr[data-key="ci"]');
    t.is(await row.locator('td[data-label="Last used"]').innerText(), 'never');
    await page.reload();
    await page.locator('tr[data-key="ci"] td[data-label="Role"]', { hasText: 'visitor' }).waitFor();
    t.regex(await row.locator('td[data-label="Last used"]').innerText(), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    t.regex(await row.locator('td[data-label="Expires"]').innerText(), /^\d{4}-\d\d-\d\d /);
    t.is(await row.locator('td[data-label="Rate"]').innerText(), '50/min');
    t.false(await pageHolds(page, key), 'nor after a reload');

    await page.getByRole('button', { name: 'Revoke ci' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke API key ci?' });
    await confirm.getByText(/It cannot be undone/).waitFor();
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').filter({ hasText: 'API key ci revoked' }).waitFor();
    await page.getByText('You have no API keys.').waitFor();
    t.is((await whoamiWith(key)).status, 401, 'refused at once');
    noProblems(t, page);
  },
);

test.serial('a superuser picks the owner: the roles offered are the owner’s at most, the list follows', async (t) => {
  const page = await open(t);
  await login(page);
  await keysPage(page);
  await page.getByRole('button', { name: 'New API key' }).click();
  const form = page.getByRole('dialog', { name: 'New API key' });
  t.deepEqual(await roleOptions(form), ['superuser', 'admin', 'visitor (read-only)']);
  await form.getByLabel('Owner').selectOption({ label: 'viewer (visitor)' });
  await form.getByLabel('Role').locator('option', { hasText: 'admin' }).waitFor({ state: 'detached' });
  t.deepEqual(await roleOptions(form), ['visitor (read-only)']);
  await form.getByLabel('Name').fill('backup');
  await form.getByLabel('Expires after').fill('2');
  await form.getByLabel('Unit').selectOption('weeks');
  await form.getByRole('button', { name: 'Create key' }).click();
  const shown = page.getByRole('dialog', { name: 'API key backup created' });
  await shown.getByText(/^For viewer, role visitor, scope all/).waitFor();
  const key = await shown.getByLabel('The key').inputValue();
  await page.keyboard.press('Escape');
  await shown.waitFor({ state: 'detached' });
  t.false(await pageHolds(page, key), 'Escape forgets it too');

  // The page now lists the viewer's keys.
  t.is(await page.getByLabel('Keys of', { exact: true }).inputValue(), String((await viewerId())!));
  const row = page.locator('tr[data-key="backup"]');
  await row.waitFor();
  t.regex(await row.locator('td[data-label="Created"]').innerText(), / by admin$/);
  const listed = await daemon.get(`/apiKeyMgr/list?userID=${await viewerId()}`, { token: root });
  const expires = Date.parse(listed.body.data[0].expiresAt) - Date.parse(listed.body.data[0].createdAt);
  t.is(expires, 14 * 86_400_000, 'two weeks');

  await page.getByLabel('Keys of', { exact: true }).selectOption({ label: 'admin (you)' });
  await page.getByText('You have no API keys.').waitFor();

  // A key for Prometheus: the metrics scope, shown in the list; the server says no to one without the admin role.
  await page.getByRole('button', { name: 'New API key' }).click();
  const scraper = page.getByRole('dialog', { name: 'New API key' });
  await scraper.getByLabel('Name').fill('prometheus');
  await scraper.getByLabel('Scope').selectOption('metrics');
  await scraper.getByLabel('Role').selectOption('visitor');
  await scraper.getByRole('button', { name: 'Create key' }).click();
  await scraper.getByText(/a metrics key needs the admin role or higher/).waitFor();
  await scraper.getByLabel('Role').selectOption('admin');
  await scraper.getByRole('button', { name: 'Create key' }).click();
  const made = page.getByRole('dialog', { name: 'API key prometheus created' });
  await made.getByText(/^For admin, role admin, scope metrics,/).waitFor();
  await made.getByRole('button', { name: 'Done' }).click();
  await page.locator('tr[data-key="prometheus"] td[data-label="Scope"]', { hasText: 'metrics' }).waitFor();
  noProblems(t, page);
});

/** The roles a key form offers, read once the form is drawn (a click's render may still be pending). */
async function roleOptions(form: Locator): Promise<string[]> {
  const role = form.getByLabel('Role');
  await role.waitFor();
  return role.locator('option').allTextContents();
}

async function viewerId(): Promise<number | undefined> {
  const users = await daemon.get('/userMgr/list', { token: root });
  return users.body.data.find((u: { Username: string }) => u.Username === 'viewer')?.UserID;
}

test.serial('a visitor has keys of its own, read-only ones; the page at desktop and phone width', async (t) => {
  for (const [viewport, suffix] of [
    [DESKTOP, 'desktop'],
    [PHONE, 'phone'],
  ] as const) {
    const page = await open(t, viewport);
    await login(page, 'viewer', 'Passw0rd!x');
    const nav = page.getByRole('navigation', { name: 'Pages' });
    t.deepEqual(await nav.getByRole('link').allTextContents(), ['Instances', 'API keys', 'System log']);
    await keysPage(page);
    await page.locator('tr[data-key="backup"]').waitFor();
    if (suffix === 'desktop') {
      await page.getByRole('button', { name: 'New API key' }).click();
      const form = page.getByRole('dialog', { name: 'New API key' });
      t.deepEqual(await roleOptions(form), ['visitor (read-only)']);
      await form.getByLabel('Name').fill('reader');
      await form.getByRole('button', { name: 'Create key' }).click();
      await page.getByRole('dialog', { name: 'API key reader created' }).getByRole('button', { name: 'Done' }).click();
      await page.locator('tr[data-key="reader"] td[data-label="Expires"]', { hasText: 'never' }).waitFor();
    }
    await shot(page, `api-keys-${suffix}`);
    t.deepEqual(await accessibilityViolations(page), [], `the list at ${viewport.width} px`);
    const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    t.true(width <= viewport.width, `fits ${viewport.width} px (${width})`);
    if (suffix === 'phone') {
      await page.getByRole('button', { name: 'New API key' }).click();
      await page.getByRole('dialog', { name: 'New API key' }).getByLabel('Name').waitFor();
      await shot(page, 'api-key-new-phone');
      t.deepEqual(await accessibilityViolations(page), [], 'the form on a phone');
    }
    noProblems(t, page);
  }
});
