import { appendFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type { Browser, Page, Request } from 'playwright-core';
import { VISITORS_TOML } from '../../config/proxy-examples.js';
import {
  accessibilityViolations,
  DESKTOP,
  launchBrowser,
  login,
  noProblems,
  openConsole,
  PHONE,
  rowAction,
  shot,
} from '../../helpers/console.js';
import { ADMIN, disposeWithTunnels, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';

/**
 * The web console in a real browser (Debian's Chromium, driven by playwright-core) against a real daemon whose
 * tunnels are the fixture frpc. One browser for the file, a new context (a fresh tab, no storage) per test.
 */

let browser: Browser;
let daemon: Daemon;
let root: string;
/** A daemon whose tokens live 8 s and that allows few logins: expiry and the login rate limit. */
let shortLived: Daemon;

test.before(async () => {
  [browser, daemon, shortLived] = await Promise.all([
    launchBrowser(),
    // Proxy and connection alerts after a second, not five: the live list is what these tests watch.
    startDaemon({ settingsToml: instanceSettings({ 'Alerts.DebounceSecs': 1 }) }),
    startDaemon({
      settingsToml: instanceSettings({ 'RateLimit.Login': 4 }),
      env: { TUNNELWARD_TOKEN_TTL_MS: '8000' },
    }),
  ]);
  root = await daemon.login();
});

test.after.always(async () => {
  await browser?.close();
  await disposeWithTunnels(daemon, root);
  // Its root token has expired: stop its tunnel through a fresh one.
  if (shortLived) await disposeWithTunnels(shortLived, await shortLived.login().catch(() => ''));
});

const open = (t: ExecutionContext, viewport = DESKTOP, on: Daemon = daemon): Promise<Page> =>
  openConsole(t, browser, on, viewport);

const storedToken = (page: Page) =>
  page.evaluate('sessionStorage.getItem("tunnelward.token")') as Promise<string | null>;

test.serial('the console is served at / with a strict CSP; a wrong password is refused plainly', async (t) => {
  const res = await fetch(daemon.url + '/');
  t.is(res.status, 200);
  t.regex(res.headers.get('content-type') ?? '', /^text\/html/);
  const csp = res.headers.get('content-security-policy') ?? '';
  for (const part of ["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'"]) {
    t.true(csp.includes(part), part);
  }
  t.true(csp.includes("frame-ancestors 'none'"));
  t.is(res.headers.get('x-content-type-options'), 'nosniff');
  t.is(res.headers.get('cache-control'), 'no-cache');
  const html = await res.text();
  t.notRegex(html, /<script>|<style|style=/, 'no inline script or style');
  const asset = /src="\.\/assets\/(app-[A-Z0-9]+\.js)"/.exec(html)![1]!;
  const js = await fetch(`${daemon.url}/assets/${asset}`);
  t.is(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
  t.regex(js.headers.get('content-type') ?? '', /^text\/javascript/);

  const page = await open(t);
  await page.getByLabel('Username').fill('admin');
  await page.getByLabel('Password').fill('Not-the-password1');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: 'Wrong username or password.' }).waitFor();
  t.is(await storedToken(page), null);

  await page.getByLabel('Password').fill(ADMIN.passwd);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Instances', exact: true }).waitFor();
  const token = await storedToken(page);
  t.truthy(token, 'the token is kept in sessionStorage');
  t.false(page.url().includes(token!), 'never in the URL');
  t.is(new URL(page.url()).search, '');
  noProblems(t, page);
});

test.serial('an admin creates an instance with two proxies and starts it; the list follows live', async (t) => {
  const page = await open(t);
  await login(page);
  await page.getByRole('button', { name: 'New instance' }).click();
  const create = page.getByRole('dialog', { name: 'New instance' });
  await create.getByLabel('Name', { exact: true }).fill('web');
  await create.getByLabel('Server address').fill('127.0.0.1');
  await create.getByLabel('Server port').fill('21901');
  await create.getByRole('button', { name: 'Create instance' }).click();
  await page.getByRole('heading', { name: 'web', exact: true }).waitFor();

  const addProxy = async (fill: (dialog: ReturnType<Page['getByRole']>) => Promise<void>) => {
    await page.getByRole('button', { name: 'Add proxy' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add a proxy' });
    await fill(dialog);
    await dialog.getByRole('button', { name: 'Add proxy' }).click();
    await dialog.waitFor({ state: 'detached' });
  };
  await addProxy(async (d) => {
    await d.getByLabel('Proxy name').fill('ssh');
    await d.getByLabel('Local port').fill('22');
    await d.getByLabel('Remote port').fill('6022');
  });
  await addProxy(async (d) => {
    await d.getByLabel('Proxy name').fill('site');
    await d.getByLabel('Type').selectOption('http');
    await d.getByLabel('Local port').fill('8080');
    await d.getByLabel('Custom domains').fill('www.example.com');
  });
  await page.locator('tr[data-proxy="site"]').waitFor();
  t.is(await page.locator('tr[data-proxy]').count(), 2);

  await page.getByRole('link', { name: '← Instances' }).click();
  const row = page.locator('tr[data-instance="web"]');
  await row.locator('.badge', { hasText: 'stopped' }).waitFor();
  await page.locator('.link-live').first().waitFor();
  // Set on this document: still there afterwards means the page was never reloaded.
  await page.evaluate('window.__sameDocument = true');
  // When the browser sent each (its own clock): when the test hears of a request varies with the machine's load.
  const listRequests: Request[] = [];
  page.on('request', (req) => {
    if (new URL(req.url()).pathname === '/tunnelAct/instanceMgr/list') listRequests.push(req);
  });

  await rowAction(page, 'web', 'Start');
  await row.locator('.badge', { hasText: 'running' }).waitFor();
  // frpc reports its proxies a moment after it runs; a loaded machine may take a while longer.
  await row.locator('.proxies-cell', { hasText: '2 running' }).waitFor({ timeout: 20_000 });
  await row.locator('.connected-cell', { hasText: 'yes' }).waitFor({ timeout: 20_000 });
  t.not(await row.locator('td[data-label="PID"]').textContent(), '—');
  t.true(await page.evaluate('window.__sameDocument === true'), 'no reload');
  // Several events came (states, proxies up, connected): the list was read again at most about once a second.
  const listReads = listRequests.map((req) => req.timing().startTime);
  const gaps = listReads.slice(1).map((at, i) => Math.round(at - listReads[i]!));
  t.true(
    listReads.every((at) => at > 0),
    'the browser says when each was sent',
  );
  t.true(listReads.length >= 1);
  // Throttled to one read a second; the browser's own clock jitters by some tens of ms.
  t.true(
    gaps.every((gap) => gap >= 850),
    `list reads ${gaps.join(', ')} ms apart`,
  );
  noProblems(t, page);
});

test.serial('one instance: log lines arrive live, pause and filter, a proxy disabled', async (t) => {
  const page = await open(t);
  await login(page);
  await page.getByRole('link', { name: 'web', exact: true }).click();
  await page.getByRole('heading', { name: 'web', exact: true }).waitFor();
  const log = page.getByRole('log', { name: 'Instance log' });
  const logins = log.locator('.line', { hasText: 'login to server success' });
  await logins.first().waitFor();
  const before = await logins.count();

  await page.getByRole('toolbar', { name: 'Instance actions' }).getByRole('button', { name: 'Restart' }).click();
  await waitFor(
    () => logins.count(),
    (n) => n > before,
  );
  t.true((await log.locator('.line.lvl-INFO').count()) > 0, 'lines coloured by level');

  // Paused: new lines are held, then shown on resume.
  await page.getByRole('button', { name: 'Pause' }).click();
  const shown = await logins.count();
  await page.getByRole('toolbar', { name: 'Instance actions' }).getByRole('button', { name: 'Restart' }).click();
  await page.getByRole('button', { name: /^Resume \(\d+\)$/ }).waitFor();
  t.is(await logins.count(), shown, 'nothing added while paused');
  await page.getByRole('button', { name: /^Resume/ }).click();
  await waitFor(
    () => logins.count(),
    (n) => n > shown,
  );

  await page.getByLabel('Filter').fill('start proxy success');
  await waitFor(
    () => log.locator('.line .msg').allTextContents(),
    (lines) => lines.length > 0 && lines.every((line) => line.includes('start proxy success')),
  );
  await page.getByLabel('Filter').fill('');

  await page.getByRole('button', { name: 'Edit ssh', exact: true }).click();
  const edit = page.getByRole('dialog', { name: 'Edit proxy ssh' });
  t.is(await edit.getByLabel('Remote port').inputValue(), '6022');
  await edit.getByLabel('Remote port').fill('6023');
  await edit.getByRole('button', { name: 'Save proxy' }).click();
  await edit.waitFor({ state: 'detached' });
  await page.locator('tr[data-proxy="ssh"] td[data-label="Remote"]', { hasText: '6023' }).waitFor();

  await page.locator('tr[data-proxy="site"] .pstatus', { hasText: 'running' }).waitFor();
  // frpc reports an http proxy at its domain, which the file names too: shown once.
  t.is(await page.locator('tr[data-proxy="site"] td[data-label="Remote"]').textContent(), 'www.example.com');
  await page.getByRole('switch', { name: 'Enabled: site' }).uncheck();
  await page.locator('tr[data-proxy="site"] .pstatus', { hasText: 'disabled' }).waitFor();
  // The config file, not being edited, follows the change.
  await waitFor(
    () => page.getByLabel('Config file (TOML)').inputValue(),
    (text) => text.includes('enabled = false'),
  );
  const id = await page.evaluate('location.hash.split("/").pop()');
  const listed = await daemon.get(`/tunnelAct/proxyMgr/list?instanceID=${String(id)}`, { token: root });
  t.false(listed.body.data.proxies.find((p: any) => p.name === 'site').enabled);
  t.true(listed.body.data.proxies.find((p: any) => p.name === 'ssh').enabled);
  await page.locator('.facts', { hasText: '1 running' }).waitFor();
  // Its status, unknown for a moment after the reload, comes back without an event that says so.
  await page.locator('tr[data-proxy="ssh"] .pstatus', { hasText: 'running' }).waitFor();
  noProblems(t, page);
});

test.serial('several instances: a new one appears live, the selected ones stop in one request', async (t) => {
  const page = await open(t);
  await login(page);
  await page.locator('tr[data-instance="web"] .badge', { hasText: 'running' }).waitFor();
  await createInstance(daemon, root, 'office');
  await page.locator('tr[data-instance="office"]').waitFor();
  await rowAction(page, 'office', 'Start');
  await page.locator('tr[data-instance="office"] .badge', { hasText: 'running' }).waitFor();

  const bodies: string[] = [];
  page.on('request', (req) => {
    if (new URL(req.url()).pathname === '/tunnelAct/instanceMgr/stop') bodies.push(req.postData() ?? '');
  });
  await page.getByLabel('Select the instances on this page').check();
  await page.getByRole('toolbar', { name: 'Selected instances' }).getByRole('button', { name: 'Stop…' }).click();
  const confirmStop = page.getByRole('dialog', { name: 'Stop 2 instances?' });
  await confirmStop.getByText('web, office.').waitFor();
  await confirmStop.getByRole('button', { name: 'Stop 2 instances' }).click();
  await page.locator('tr[data-instance="web"] .badge', { hasText: 'stopped' }).waitFor();
  await page.locator('tr[data-instance="office"] .badge', { hasText: 'stopped' }).waitFor();
  t.is(bodies.length, 1, 'one request');
  t.is(JSON.parse(bodies[0]!).instanceIDs.length, 2);
  await page.getByRole('status').filter({ hasText: 'stop: 2 of 2 instances ok' }).waitFor();

  // Start web again for the pages that follow; rename office, then delete it after confirming.
  await rowAction(page, 'web', 'Start');
  await rowAction(page, 'office', 'Rename…');
  const rename = page.getByRole('dialog', { name: 'Rename office' });
  await rename.getByLabel('New name').fill('branch');
  await rename.getByRole('button', { name: 'Rename' }).click();
  await page.locator('tr[data-instance="branch"]').waitFor();
  await createInstance(daemon, root, 'scratch');
  await rowAction(page, 'scratch', 'Delete…');
  const confirm = page.getByRole('dialog', { name: 'Delete scratch?' });
  await confirm.getByRole('button', { name: 'Cancel' }).click();
  t.is(await page.locator('tr[data-instance="scratch"]').count(), 1, 'cancel keeps it');
  await rowAction(page, 'scratch', 'Delete…');
  await confirm.getByRole('button', { name: 'Delete instance' }).click();
  await page.locator('tr[data-instance="scratch"]').waitFor({ state: 'detached' });
  await page.locator('tr[data-instance="web"] .badge', { hasText: 'running' }).waitFor();
  noProblems(t, page);
});

test.serial('one instance: its visitors listed, and in the config file an admin edits (secrets masked)', async (t) => {
  // An admin, not a superuser, who made the instance (it changes its own): secrets come masked, and must be kept
  // as they are.
  const admin = await daemon.userWithToken(root, 'cfg_admin', 'admin');
  const { id, configPath } = await createInstance(daemon, admin.token, 'vis', { 'auth.token': 'vis-secret-token' });
  await appendFile(configPath, VISITORS_TOML);
  const page = await open(t);
  await login(page, 'cfg_admin', 'Passw0rd!x');
  await page.goto(`${daemon.url}/#/instances/${id}`);
  const visitors = page.getByRole('region', { name: 'Visitors' });
  await visitors.locator('tr[data-visitor="pg_visitor"]').waitFor();
  t.deepEqual(await visitors.locator('tr[data-visitor="pg_visitor"] > *').allTextContents(), [
    'pg_visitor',
    'stcp',
    'postgres',
    '127.0.0.1:15432',
    'yes',
  ]);
  t.deepEqual(await visitors.locator('tr[data-visitor="p2p_visitor"] > *').allTextContents(), [
    'p2p_visitor',
    'xtcp',
    'p2p',
    '127.0.0.1:16000',
    'yes',
  ]);

  // The whole file is edited in one text (test/e2e/console/instance-edit.test.ts): here, that it holds the visitors.
  const editor = page.getByLabel('Config file (TOML)');
  const text = await waitFor(
    () => editor.inputValue(),
    (value) => value.includes('serverAddr = "127.0.0.1"'),
  );
  t.true(text.includes('name = "pg_visitor"'), 'the visitors are in the file edited');
  t.regex(text, /token = "\*{8}"/, 'an admin sees the token masked');
  t.regex(await readFile(configPath, 'utf8'), /token = "vis-secret-token"/);
  t.is(await page.getByRole('alert').count(), 0);
  t.deepEqual(await accessibilityViolations(page), []);
  await shot(page, 'instance-config-desktop');
  noProblems(t, page);
});

test.serial('a visitor is offered no admin action and no admin page', async (t) => {
  await daemon.userWithToken(root, 'viewer', 'visitor');
  const page = await open(t);
  await login(page, 'viewer', 'Passw0rd!x');
  await page.locator('tr[data-instance="web"] .badge', { hasText: 'running' }).waitFor();
  const nav = page.getByRole('navigation', { name: 'Pages' });
  t.deepEqual(await nav.getByRole('link').allTextContents(), ['Instances', 'API keys', 'System log']);
  t.is(await page.getByRole('button', { name: 'New instance' }).count(), 0);
  t.is(await page.getByRole('button', { name: /^(Start|Stop|Restart|Rename|Delete) web$|^Actions for/ }).count(), 0);
  t.is(await page.getByRole('checkbox').count(), 0);

  await page.getByRole('link', { name: 'web', exact: true }).click();
  await page.getByRole('heading', { name: 'Proxies' }).waitFor();
  await page.locator('tr[data-proxy="ssh"]').waitFor();
  t.is(await page.getByRole('toolbar', { name: 'Instance actions' }).count(), 0);
  t.is(await page.getByRole('button', { name: /Add proxy|Edit|Delete/ }).count(), 0);
  t.is(await page.getByRole('switch').count(), 0);
  t.is(await page.getByRole('heading', { name: 'Service' }).count(), 0);
  t.is(await page.getByRole('log').count(), 0, 'the log of an instance is its creator’s and superusers’');

  await page.goto(daemon.url + '/#/settings');
  await page.getByRole('heading', { name: 'Not available' }).waitFor();
  await page.goto(daemon.url + '/#/users');
  await page.getByRole('heading', { name: 'Not available' }).waitFor();
  noProblems(t, page);
});

test.serial('settings: grouped, checked by type, a masked secret kept when sent back', async (t) => {
  await daemon.post('/settings/set', { 'Webhook.Headers': { Authorization: 'Bearer s3cret-value' } }, { token: root });
  const page = await open(t);
  await login(page);
  await page.getByRole('link', { name: 'Settings' }).click();
  await page.getByRole('heading', { name: 'Settings' }).waitFor();
  await page.getByRole('group', { name: 'Watchdog', exact: true }).waitFor();
  t.is(await page.getByRole('group', { name: 'Watchdog', exact: true }).getByLabel('Watchdog.StartLimit').count(), 1);
  const header = page.getByLabel('Header 1 value');
  t.is(await header.inputValue(), '********');
  t.is(await header.getAttribute('type'), 'password');

  const limit = page.getByLabel('Watchdog.StartLimit');
  await limit.fill('many');
  await page.getByText('A whole number from 1 to 1000.').waitFor();
  t.true(await page.getByRole('button', { name: 'Save settings' }).isDisabled());
  await limit.fill('4');
  await page.getByRole('button', { name: 'Add header' }).click();
  await page.getByLabel('Header 2 name').fill('X-Extra');
  await page.getByLabel('Header 2 value').fill('extra-value');
  const request = page.waitForRequest((r) => r.url().includes('/settings/set'));
  await page.getByRole('button', { name: 'Save settings' }).click();
  t.regex((await request).url(), /\/settings\/set\?strict=true$/, 'the strict form: a key the daemon lacks fails');
  await page.getByRole('status').filter({ hasText: 'settings saved' }).waitFor();
  const saved = await readFile(join(daemon.dataDir, 'settings.toml'), 'utf8');
  t.regex(saved, /StartLimit = 4/);
  t.regex(saved, /Bearer s3cret-value/, 'the masked value was kept');
  t.regex(saved, /extra-value/);
  t.notRegex(saved, /\*{8}/);
  noProblems(t, page);
});

test.serial('users and sessions: a superuser creates a user; the password rules are shown', async (t) => {
  const page = await open(t);
  await login(page);
  await page.getByRole('link', { name: 'Users' }).click();
  await page.getByRole('button', { name: 'New user' }).click();
  const dialog = page.getByRole('dialog', { name: 'New user' });
  await dialog.getByLabel('Username').fill('operator');
  await dialog.getByLabel('Password').fill('weak');
  await dialog.getByText(/^Needs 8 or more characters/).waitFor();
  await dialog.getByLabel('Password').fill('Str0ng!pass');
  await dialog.getByLabel('Role').selectOption('admin');
  await dialog.getByRole('button', { name: 'Create user' }).click();
  await page.locator('tr[data-user="operator"]').waitFor();
  t.is(await page.getByLabel('Role of operator').inputValue(), 'admin');
  t.true((await page.locator('table.sessions tbody tr').count()) >= 1);
  noProblems(t, page);
});

test.serial('keyboard only: log in, open a dialog and close it, focus always visible', async (t) => {
  const page = await open(t);
  const focusVisible = () =>
    page.evaluate(
      `(() => { const el = document.activeElement; const s = getComputedStyle(el);
        return { tag: el.tagName, label: el.getAttribute('aria-label') || el.textContent.trim(), outline: s.outlineStyle, width: s.outlineWidth }; })()`,
    ) as Promise<{ tag: string; label: string; outline: string; width: string }>;
  // The username field has the focus on arrival.
  await waitFor(focusVisible, (focused) => focused.tag === 'INPUT');
  await page.keyboard.type(ADMIN.username);
  await page.keyboard.press('Tab');
  await page.keyboard.type(ADMIN.passwd);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Instances', exact: true }).waitFor();
  // The first Tab reaches the skip link, the next ones the navigation.
  await page.keyboard.press('Tab');
  t.like(await focusVisible(), { label: 'Skip to content', outline: 'solid' });
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  t.like(await focusVisible(), { tag: 'A', label: 'Instances', outline: 'solid', width: '3px' });

  const button = page.getByRole('button', { name: 'New instance' });
  await button.focus();
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'New instance' });
  await dialog.waitFor();
  t.like(await focusVisible(), { tag: 'INPUT' });
  t.true(
    await dialog
      .getByLabel('Name', { exact: true })
      .evaluate((el) => el === (el.ownerDocument.activeElement as unknown)),
  );
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  const back = await waitFor(focusVisible, (focused) => focused.label === 'New instance', 3000);
  t.is(back.outline, 'solid', 'back on the button that opened it');

  // A row's Actions menu: opened on its first item, arrows and Home/End move, Escape goes back to the button.
  const menuButton = page.getByRole('button', { name: 'Actions for web', exact: true });
  await menuButton.focus();
  await page.keyboard.press('Enter');
  const menu = page.getByRole('menu', { name: 'Actions for web' });
  await menu.waitFor();
  t.is(await menuButton.getAttribute('aria-expanded'), 'true');
  t.like(await waitFor(focusVisible, (focused) => focused.label === 'Start', 3000), { outline: 'solid' });
  t.is(
    await menu.getByRole('menuitem', { name: 'Start', exact: true }).getAttribute('aria-disabled'),
    'true',
    'web runs',
  );
  await page.keyboard.press('ArrowDown');
  t.like(await focusVisible(), { label: 'Stop' });
  await page.keyboard.press('End');
  t.like(await focusVisible(), { label: 'Delete…' });
  await page.keyboard.press('ArrowDown');
  t.like(await focusVisible(), { label: 'Start' }, 'wraps around');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  const deleting = page.getByRole('dialog', { name: 'Delete web?' });
  await deleting.waitFor();
  await page.keyboard.press('Escape');
  await deleting.waitFor({ state: 'detached' });
  await waitFor(focusVisible, (focused) => focused.label === 'Actions for web', 3000);
  await page.keyboard.press('ArrowDown');
  await menu.waitFor();
  await page.keyboard.press('Escape');
  await menu.waitFor({ state: 'detached' });
  t.like(await focusVisible(), { label: 'Actions for web', outline: 'solid' });
  noProblems(t, page);
});

test.serial('logout ends the session and says so', async (t) => {
  const page = await open(t);
  await login(page);
  const token = await storedToken(page);
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('status').filter({ hasText: 'You have logged out.' }).waitFor();
  t.is(await storedToken(page), null);
  t.is((await daemon.get('/whoami', { token: token! })).status, 401, 'the token no longer works');
  noProblems(t, page);
});

test.serial('every main page at desktop and phone width', async (t) => {
  for (const [viewport, suffix] of [
    [DESKTOP, 'desktop'],
    [PHONE, 'phone'],
  ] as const) {
    const page = await open(t, viewport);
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await shot(page, `login-${suffix}`);
    t.deepEqual(await accessibilityViolations(page), [], `login at ${viewport.width} px`);
    await login(page);
    await page.locator('tr[data-instance="web"] .proxies-cell', { hasText: 'running' }).waitFor();
    await page.locator('tr[data-instance="branch"] .badge', { hasText: 'stopped' }).waitFor();
    await shot(page, `instances-${suffix}`);
    t.deepEqual(await accessibilityViolations(page), [], `instances at ${viewport.width} px`);
    const pages: Array<[string, string, string]> = [
      ['instance', 'web', 'tr[data-proxy="ssh"] .pstatus-ok'],
      ['settings', 'Settings', 'fieldset.group'],
      ['users', 'Users', 'tr[data-user]'],
      ['system-log', 'System log', '.log .line'],
    ];
    for (const [name, heading, ready] of pages) {
      if (name === 'instance') await page.getByRole('link', { name: 'web', exact: true }).click();
      else await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: heading }).click();
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await page.locator(ready).first().waitFor();
      if (name === 'instance') await page.locator('.log .line').first().waitFor();
      await shot(page, `${name}-${suffix}`);
      t.deepEqual(await accessibilityViolations(page), [], `${name} at ${viewport.width} px`);
      const overflow = (await page.evaluate('document.documentElement.scrollWidth')) as number;
      t.true(overflow <= viewport.width, `${name} fits ${viewport.width} px (${overflow})`);
    }
    noProblems(t, page);
  }
});

test.serial('an expired token sends the user back to the login page; the streams close with 4401', async (t) => {
  const token = await shortLived.login();
  await createInstance(shortLived, token, 'brief');
  const page = await open(t, DESKTOP, shortLived);
  // Records how each WebSocket of the page closes (injected by the browser, not subject to the page's CSP).
  await page.context().addInitScript({
    content: `window.__closes = [];
      const Native = window.WebSocket;
      window.WebSocket = class extends Native {
        constructor(...args) {
          super(...args);
          const path = new URL(args[0]).pathname;
          this.addEventListener('close', (e) => window.__closes.push({ path, code: e.code, reason: e.reason }));
        }
      };`,
  });
  await page.reload();
  await login(page);
  await page.getByRole('link', { name: 'brief', exact: true }).click();
  await page.getByRole('log', { name: 'Instance log' }).waitFor();
  await page.locator('.log-status', { hasText: 'Live' }).waitFor();
  const notice = page.getByRole('alert').filter({ hasText: 'Your session expired. Log in again to continue.' });
  await notice.waitFor({ timeout: 15_000 });
  t.regex((await notice.getAttribute('data-detail')) ?? '', /4401 token expired/);
  t.is(await storedToken(page), null);
  await page.getByRole('button', { name: 'Log in' }).waitFor();
  const closes = (await page.evaluate('window.__closes')) as Array<{ path: string; code: number; reason: string }>;
  t.true(
    closes.some((c) => c.code === 4401 && c.reason === 'token expired'),
    JSON.stringify(closes),
  );
  noProblems(t, page);
});

test.serial('too many logins: the rate limit is said plainly, with the wait', async (t) => {
  const page = await open(t, DESKTOP, shortLived);
  const messages: string[] = [];
  for (let i = 0; i < 6 && !messages.some((m) => m.startsWith('Too many')); i++) {
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(`Wrong-password-${i}`);
    const answered = page.waitForResponse((res) => new URL(res.url()).pathname === '/login');
    await page.getByRole('button', { name: 'Log in' }).click();
    const status = (await answered).status();
    const alert = page.getByRole('alert').filter({ hasText: status === 429 ? /^Too many/ : /^Wrong username/ });
    await alert.waitFor();
    messages.push((await alert.textContent()) ?? '');
  }
  t.regex(
    messages.at(-1)!,
    /^Too many login attempts\. Wait \d+ seconds? before trying again\.$/,
    messages.join(' | '),
  );
  noProblems(t, page);
});
