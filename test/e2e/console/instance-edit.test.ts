import { readFile } from 'node:fs/promises';
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
import { disposeWithTunnels, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, waitFor } from '../../helpers/instances.js';

/**
 * The operator's edit loop in the web console (real Chromium, real daemon, the fixture frpc): the list filtered by
 * labels, labels added and removed on the instance page, and the whole config file edited as `tunnelward edit` does.
 * Serial: the list's counts are of every instance of the daemon.
 */

let browser: Browser;
let daemon: Daemon;
let root: string;
let adminToken: string;

test.before(async () => {
  [browser, daemon] = await Promise.all([launchBrowser(), startDaemon({ settingsToml: instanceSettings() })]);
  root = await daemon.login();
  // An admin, not a superuser: secrets come masked, and must keep their value. It changes the instances it creates
  // (see may).
  adminToken = (await daemon.userWithToken(root, 'edit_admin', 'admin')).token;
});

test.after.always(async () => {
  await browser?.close();
  await disposeWithTunnels(daemon, root);
});

const open = async (t: ExecutionContext, viewport = DESKTOP): Promise<Page> => {
  const page = await openConsole(t, browser, daemon, viewport);
  await login(page, 'edit_admin', 'Passw0rd!x');
  return page;
};

const labelsOf = async (id: string) =>
  (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root })).body.data.labels;

const shownRows = (page: Page) =>
  page.locator('table.instances tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-instance')));

test.serial('the list filters by labels, with the name search and the state filter', async (t) => {
  const labelled: Array<[string, Record<string, string>]> = [
    ['lb_api', { env: 'prod', team: 'web' }],
    ['lb_web', { env: 'prod', team: 'web', tier: 'edge' }],
    ['lb_db', { env: 'prod', team: 'data' }],
    ['lb_stage', { env: 'staging', team: 'web' }],
    ['lb_plain', {}],
  ];
  const ids = new Map<string, string>();
  for (const [name, labels] of labelled) ids.set(name, (await createInstance(daemon, root, name, {}, { labels })).id);
  const started = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: ids.get('lb_web') }, { token: root });
  t.true(started.body.success, started.body.message);

  const page = await open(t);
  await page.locator('tr[data-instance="lb_web"] .badge', { hasText: 'running' }).waitFor();
  const row = page.locator('tr[data-instance="lb_web"]');
  t.deepEqual(await row.locator('.labels-cell .label-chip').allTextContents(), ['env=prod', 'team=web', 'tier=edge']);
  t.is(await page.locator('tr[data-instance="lb_plain"] .labels-cell').textContent(), '—');

  const labels = page.getByLabel('Labels', { exact: true });
  const count = page.locator('.filters [role="status"]');
  await labels.fill('env=prod');
  await count.filter({ hasText: '3 of 5 instances' }).waitFor();
  t.deepEqual(await shownRows(page), ['lb_api', 'lb_web', 'lb_db']);
  // Every label must match; a key alone matches any value of it.
  await labels.fill('env=prod team=web');
  await count.filter({ hasText: '2 of 5 instances' }).waitFor();
  t.deepEqual(await shownRows(page), ['lb_api', 'lb_web']);
  await labels.fill('tier');
  await count.filter({ hasText: '1 of 5 instances' }).waitFor();
  t.deepEqual(await shownRows(page), ['lb_web']);
  // Compared exactly, as --label compares: a part of a value is not the value.
  await labels.fill('env=pro');
  await page.getByText('No instance matches the filter.').waitFor();

  // With the name search and the state filter.
  await labels.fill('team=web');
  await page.getByLabel('Search by name').fill('lb_');
  await count.filter({ hasText: '3 of 5 instances' }).waitFor();
  await page.getByLabel('State').selectOption('stopped');
  await count.filter({ hasText: '2 of 5 instances' }).waitFor();
  t.deepEqual(await shownRows(page), ['lb_api', 'lb_stage']);
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await count.filter({ hasText: /^5 instances$/ }).waitFor();
  t.is(await labels.inputValue(), '');

  // A row's label chosen filters by it.
  await page.locator('tr[data-instance="lb_db"]').getByRole('button', { name: 'team=data' }).click();
  await count.filter({ hasText: '1 of 5 instances' }).waitFor();
  t.is(await labels.inputValue(), 'team=data');
  await labels.fill('env=prod');
  await count.filter({ hasText: '3 of 5 instances' }).waitFor();
  t.deepEqual(await accessibilityViolations(page), []);
  await shot(page, 'instances-labels-desktop');

  const phone = await open(t, PHONE);
  await phone.locator('tr[data-instance="lb_web"] .badge', { hasText: 'running' }).waitFor();
  await phone.getByLabel('Labels', { exact: true }).fill('env=prod');
  await phone.locator('.filters [role="status"]', { hasText: '3 of 5 instances' }).waitFor();
  await shot(phone, 'instances-labels-phone');
  t.true(((await phone.evaluate('document.documentElement.scrollWidth')) as number) <= PHONE.width);
  t.deepEqual(await accessibilityViolations(phone), []);
  noProblems(t, page);
  noProblems(t, phone);
});

test.serial('an admin adds and removes labels on the instance page; a refusal keeps the text', async (t) => {
  const { id } = await createInstance(daemon, adminToken, 'lb_page', {}, { labels: { env: 'prod' } });
  const page = await open(t);
  await page.goto(`${daemon.url}/#/instances/${id}`);
  const panel = page.getByRole('region', { name: 'Labels' });
  await panel.locator('[data-label-key="env"]', { hasText: 'env=prod' }).waitFor();
  const input = panel.getByLabel('New label');
  const add = panel.getByRole('button', { name: 'Add label' });

  await input.fill('team=web');
  await add.click();
  await panel.locator('[data-label-key="team"]', { hasText: 'team=web' }).waitFor();
  // The chip may come with the live list before the reply that clears the text.
  t.is(
    await waitFor(
      () => input.inputValue(),
      (v) => v === '',
      5000,
    ),
    '',
    'the text is cleared once added',
  );
  await page.getByRole('status').filter({ hasText: 'labels of instance lb_page changed' }).waitFor();
  t.deepEqual(await labelsOf(id), { env: 'prod', team: 'web' });

  // Not key=value: said here; a key the daemon refuses: its message. The text stays either way.
  await input.fill('team');
  await add.click();
  await panel.getByRole('alert').filter({ hasText: 'A label is key=value' }).waitFor();
  await input.fill('bad key=x');
  await add.click();
  await panel.getByRole('alert').filter({ hasText: 'label key "bad key"' }).waitFor();
  t.is(await input.inputValue(), 'bad key=x');
  t.deepEqual(await labelsOf(id), { env: 'prod', team: 'web' });

  // The same key again changes its value.
  await input.fill('env=staging');
  await add.click();
  await panel.locator('[data-label-key="env"]', { hasText: 'env=staging' }).waitFor();
  t.is(await panel.getByRole('alert').count(), 0, 'the refusal is gone once a change is made');

  await panel.getByRole('button', { name: 'Remove label team=web' }).click();
  await panel.locator('[data-label-key="team"]').waitFor({ state: 'detached' });
  t.deepEqual(await labelsOf(id), { env: 'staging' });
  t.deepEqual(await accessibilityViolations(page), []);
  noProblems(t, page);
});

test.serial('an admin turns end-to-end probes on and off on the instance page', async (t) => {
  const { id } = await createInstance(daemon, adminToken, 'probed_page');
  const probesOf = async () =>
    (await daemon.get(`/tunnelAct/instanceMgr/getInfo?instanceID=${id}`, { token: root })).body.data.probes;
  t.false(await probesOf(), 'off by default');
  const page = await open(t);
  await page.goto(`${daemon.url}/#/instances/${id}`);
  const panel = page.getByRole('region', { name: 'Service' });
  const probes = panel.getByLabel('Probe end to end');
  t.false(await probes.isChecked());
  await probes.check();
  await panel.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'probed_page' }).first().waitFor();
  t.true(await waitFor(probesOf, (v) => v === true, 5000));
  await shot(page, 'instance-probes-on');
  await probes.uncheck();
  await panel.getByRole('button', { name: 'Save' }).click();
  t.false(await waitFor(probesOf, (v) => v === false, 5000));
  t.false(await probes.isChecked());
  noProblems(t, page);
});

const PROXY = `
[[proxies]]
name = "web_ui"
type = "tcp"
localIP = "127.0.0.1"
localPort = 8080
remotePort = 6080
`;

test.serial(
  'the whole config file edited: a proxy added by a reload, the diff shown; refusals keep the text',
  async (t) => {
    const { id, configPath } = await createInstance(daemon, adminToken, 'ed_file', {
      'auth.token': 'edit-secret-token',
    });
    const started = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
    t.true(started.body.success, started.body.message);
    const page = await open(t);
    await page.goto(`${daemon.url}/#/instances/${id}`);
    await page.getByRole('heading', { name: 'ed_file' }).waitFor();
    await page.locator('.instance-page .badge', { hasText: 'running' }).waitFor();
    const editor = page.getByLabel('Config file (TOML)');
    const original = await waitFor(
      () => editor.inputValue(),
      (text) => text.includes('serverAddr = "127.0.0.1"'),
    );
    t.regex(original, /token = "\*{8}"/, 'an admin sees the token masked');
    const save = page.getByRole('button', { name: 'Save file' });
    const alert = page.locator('.config-editor').getByRole('alert');

    // Not TOML, and a key frpc does not know: the daemon's message; the text stays as typed; the file is as it was.
    const before = await readFile(configPath, 'utf8');
    const notToml = `${original}oops = \n`;
    await editor.fill(notToml);
    await save.click();
    await alert.filter({ hasText: /TOML/ }).waitFor();
    t.is(await editor.inputValue(), notToml);
    const unknownKey = `unknownKey = 1\n${original}`;
    await editor.fill(unknownKey);
    await save.click();
    await alert.filter({ hasText: 'Unknown config key: unknownKey' }).waitFor();
    t.is(await editor.inputValue(), unknownKey);
    t.is(await readFile(configPath, 'utf8'), before);

    // A proxy added (and webServer touched, which stays tunnelward's): reloaded, the notes and the diff shown.
    await editor.fill(`${original}${PROXY}\n[webServer]\nport = 7999\n`);
    await save.click();
    const outcome = page.locator('.config-editor .edit-outcome[role="status"]');
    await outcome.locator('[data-applied="reload"]', { hasText: 'applied by a reload' }).waitFor();
    t.regex(
      (await outcome.getByRole('list', { name: 'Notes' }).textContent()) ?? '',
      /webServer .* was kept as it was/,
    );
    const diff = page.getByLabel('Changes (unified diff)');
    t.regex((await diff.textContent()) ?? '', /\+name = "web_ui"/);
    t.is(await diff.locator('.add', { hasText: '+remotePort = 6080' }).count(), 1);
    t.is(await alert.count(), 0);
    await page.locator('tr[data-proxy="web_ui"]').waitFor();
    const file = await readFile(configPath, 'utf8');
    t.regex(file, /name = "web_ui"/);
    t.regex(file, /token = "edit-secret-token"/, 'the masked token kept its value');
    t.notRegex(file, /port = 7999/);
    // The editor follows the file as saved, ready for the next edit.
    await waitFor(
      () => editor.inputValue(),
      (text) => text.includes('name = "web_ui"') && !text.includes('7999'),
    );
    t.true(await save.isDisabled(), 'nothing to save until the text changes');

    await page.locator('.config-editor').scrollIntoViewIfNeeded();
    await editor.scrollIntoViewIfNeeded();
    await shot(page, 'instance-editor-desktop');
    t.deepEqual(await accessibilityViolations(page), []);
    noProblems(t, page);
  },
);

test.serial(
  'a file changed meanwhile: the save is refused, the current file can be loaded, the text kept',
  async (t) => {
    const { id, configPath } = await createInstance(daemon, adminToken, 'ed_race');
    const page = await open(t, PHONE);
    await page.goto(`${daemon.url}/#/instances/${id}`);
    const editor = page.getByLabel('Config file (TOML)');
    const original = await waitFor(
      () => editor.inputValue(),
      (text) => text.includes('serverAddr = "127.0.0.1"'),
    );
    const mine = `${original}${PROXY}`;
    await editor.fill(mine);

    // Someone else changes the file while the text is being edited.
    const other = await daemon.post(
      '/tunnelAct/proxyMgr/create',
      {
        instanceID: id,
        proxyInfo: { name: 'theirs', type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: '6122' },
      },
      { token: root },
    );
    t.true(other.body.success, other.body.message);
    await page.locator('tr[data-proxy="theirs"]').waitFor();
    t.is(await editor.inputValue(), mine, 'the text being edited is not replaced by the change');

    await page.getByRole('button', { name: 'Save file' }).click();
    await page.locator('.config-editor').getByRole('alert').filter({ hasText: 'was changed since version' }).waitFor();
    await page.getByText('The file was changed by someone else since you opened it').waitFor();
    t.is(await editor.inputValue(), mine);
    t.notRegex(await readFile(configPath, 'utf8'), /web_ui/);

    await page.getByRole('button', { name: 'Load the current file' }).click();
    await waitFor(
      () => editor.inputValue(),
      (text) => text.includes('name = "theirs"'),
    );
    t.false((await editor.inputValue()).includes('web_ui'));
    t.is(await page.locator('.config-editor').getByRole('alert').count(), 0);
    await page.getByText('Your text, not applied').click();
    t.regex((await page.getByLabel('Your text, not applied').textContent()) ?? '', /name = "web_ui"/);

    // Made again on the current file, it is saved (the tunnel is stopped: at its next start).
    await editor.fill(`${await editor.inputValue()}${PROXY}`);
    await page.getByRole('button', { name: 'Save file' }).click();
    await page.locator('[data-applied="on next start"]').waitFor();
    const file = await readFile(configPath, 'utf8');
    t.regex(file, /name = "theirs"/);
    t.regex(file, /name = "web_ui"/);
    await editor.scrollIntoViewIfNeeded();
    await shot(page, 'instance-editor-phone');
    t.true(((await page.evaluate('document.documentElement.scrollWidth')) as number) <= PHONE.width);
    t.deepEqual(await accessibilityViolations(page), []);
    noProblems(t, page);
  },
);

test.serial(
  "the history: each revision's diff, and a rollback shown as a dry run first; another admin sees it read-only",
  async (t) => {
    const { id, configPath } = await createInstance(daemon, adminToken, 'hi_page');
    const add = (name: string, port: number) =>
      daemon.post(
        '/tunnelAct/proxyMgr/create',
        {
          instanceID: id,
          proxyInfo: { name, type: 'tcp', localIP: '127.0.0.1', localPort: '22', remotePort: String(port) },
        },
        { token: adminToken },
      );
    t.true((await add('first', 6901)).body.success);
    t.true((await add('second', 6902)).body.success);
    const page = await open(t);
    await page.goto(`${daemon.url}/#/instances/${id}`);
    const history = page.getByRole('region', { name: 'History' });
    await history.locator('tr[data-revision="3"]').waitFor();
    await history.getByText('at revision 3; 3 kept').waitFor();
    const created = await history.locator('tr[data-revision="1"]').innerText();
    t.regex(created, /create name=hi_page serverAddr=127\.0\.0\.1 serverPort=\d+ auth_method=token/);
    t.false(created.includes('additionalProperties'), `no empty list of other keys: ${created}`);

    // The diff of revision 3: what it added.
    await history.locator('tr[data-revision="3"]').getByRole('button', { name: 'Diff' }).click();
    const diff = history.getByLabel('Changes (unified diff)');
    await diff.waitFor();
    t.regex((await diff.textContent()) ?? '', /\+name = "second"/);

    // Roll back to revision 2: the dry run's plan and diff first, then the rollback, as revision 4.
    await history.locator('tr[data-revision="2"]').getByRole('button', { name: 'Roll back' }).click();
    const dialog = page.getByRole('dialog', { name: 'Roll back to revision 2?' });
    await dialog.getByText(/file only \(the tunnel is stopped/).waitFor();
    t.regex((await dialog.getByLabel('Changes (unified diff)').textContent()) ?? '', /-name = "second"/);
    await shot(page, 'instance-history-rollback');
    t.deepEqual(await accessibilityViolations(page), []);
    await dialog.getByRole('button', { name: 'Roll back' }).click();
    await history.locator('tr[data-revision="4"]', { hasText: 'rollback' }).waitFor();
    await history.getByText('at revision 4; 4 kept').waitFor();
    t.notRegex(await readFile(configPath, 'utf8'), /name = "second"/);
    await page.locator('tr[data-proxy="first"]').waitFor();
    t.is(await page.locator('tr[data-proxy="second"]').count(), 0, 'the proxies follow');

    // Another admin: the history and its diffs, no rollback, no editor (the owner's and superusers').
    await daemon.userWithToken(root, 'hi_other', 'admin');
    const other = await openConsole(t, browser, daemon, DESKTOP);
    await login(other, 'hi_other', 'Passw0rd!x');
    await other.goto(`${daemon.url}/#/instances/${id}`);
    const theirs = other.getByRole('region', { name: 'History' });
    await theirs.locator('tr[data-revision="4"]').waitFor();
    t.is(await theirs.getByRole('button', { name: 'Roll back' }).count(), 0);
    t.is(await other.getByRole('button', { name: 'Save file' }).count(), 0);
    t.is(await other.getByRole('button', { name: 'Add proxy' }).count(), 0);
    t.true(await other.getByRole('button', { name: 'Start', exact: true }).isVisible(), 'any admin starts and stops');
    noProblems(t, page);
    noProblems(t, other);
  },
);
