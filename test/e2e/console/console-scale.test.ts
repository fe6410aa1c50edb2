import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
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
import { disposeWithTunnels, startDaemon, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy, waitFor } from '../../helpers/instances.js';

/**
 * The console with a thousand instances: the summary bar, search and filters, pages, bulk actions on a selection.
 * Seven of them run (fixture frpc): four well, one whose server is down, one with a proxy whose port is taken, one
 * that crashes until the watchdog gives up; the rest are stopped.
 */

const TOTAL = 1000;
const name = (n: number) => `edge-${String(n).padStart(4, '0')}`;

let browser: Browser;
let daemon: Daemon;
let root: string;
let controls: string;
/**
 * The names in the order the list (and so the console) shows them: by instance id, which follows the order the
 * creates were handled in, not their names (sixteen at a time, and on a loaded machine not in the order sent).
 */
let order: string[] = [];
/** The first of `order` that `keep` keeps. */
const firstOf = (keep: (n: string) => boolean) => order.find(keep)!;

test.before(async () => {
  controls = await mkdtemp(join(tmpdir(), 'tunnelward-console-scale-'));
  [browser, daemon] = await Promise.all([
    launchBrowser(),
    startDaemon({ settingsToml: instanceSettings({ 'Alerts.DebounceSecs': 1 }) }),
  ]);
  root = await daemon.login();
});

// Setup as a test of its own, with a longer timeout: a thousand creates take about a minute on a loaded machine.
test.serial('a thousand instances are created through the API and seven of them started', async (t) => {
  t.timeout(240_000);
  const serverDown = join(controls, 'server-down.json');
  const portTaken = join(controls, 'port-taken.json');
  await writeFile(serverDown, JSON.stringify({ server: 'down' }));
  await writeFile(portTaken, JSON.stringify({ portsTaken: [7106] }));
  const special: Record<number, Record<string, unknown>> = {
    5: { metadatas: { 'fixture.control': serverDown } },
    6: { metadatas: { 'fixture.control': portTaken } },
    7: { metadatas: { 'fixture.crashAfterMs': '500' } },
  };
  // A few requests at a time: the catalogue holds ports and names from the check to the write.
  const ids: string[] = [];
  let next = 1;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next <= TOTAL) {
        const n = next++;
        ids[n] = (await createInstance(daemon, root, name(n), special[n] ?? {})).id;
      }
    }),
  );
  t.log(`${TOTAL} instances created in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  for (let n = 1; n <= 6; n++) {
    const res = await daemon.post(
      '/tunnelAct/proxyMgr/create',
      { instanceID: ids[n], proxyInfo: tcpProxy('ssh', 7100 + n) },
      { token: root },
    );
    if (!res.body.success) throw new Error(res.body.message);
  }
  await daemon.post('/tunnelAct/instanceMgr/start', { instanceIDs: ids.slice(1, 8) }, { token: root });
  // Settled: the crashing one failed, the others running, the server that is down and the taken port reported.
  await waitFor(
    async () => (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body.data as any[],
    (list) => {
      const by = (n: number) => list.find((i) => i.name === name(n));
      return (
        [1, 2, 3, 4, 6].every((n) => by(n)?.connected === true) &&
        by(5)?.connected === false &&
        by(6)?.proxyStatus['start error'] === 1 &&
        [1, 2, 3, 4].every((n) => by(n)?.proxyStatus.running === 1) &&
        by(7)?.state === 'failed'
      );
    },
    30_000,
  );
  const listed = (await daemon.get('/tunnelAct/instanceMgr/list', { token: root })).body;
  t.is(listed.data.length, TOTAL);
  order = (listed.data as { name: string }[]).map((i) => i.name);
});

test.after.always(async () => {
  await browser?.close();
  await disposeWithTunnels(daemon, root);
  if (controls) await rm(controls, { recursive: true, force: true });
});

const open = (t: ExecutionContext, viewport = DESKTOP): Promise<Page> => openConsole(t, browser, daemon, viewport);

const chip = (page: Page, key: string) => page.locator(`.summary [data-count="${key}"]`);
const chipValue = async (page: Page, key: string) => Number(await chip(page, key).locator('.chip-value').textContent());
const rowNames = (page: Page) =>
  page.locator('tr[data-instance]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-instance')));
const domNodes = (page: Page) => page.evaluate('document.getElementsByTagName("*").length') as Promise<number>;

/** Waits for an instance's row; when it does not come, fails with what the page shows instead, and a screenshot. */
async function row(page: Page, instance: string): Promise<void> {
  try {
    await page.locator(`tr[data-instance="${instance}"]`).waitFor();
  } catch (err) {
    const shown = await page
      .locator('body')
      .innerText()
      .catch(() => '(nothing)');
    await shot(page, `missing-row-${instance}`).catch(() => undefined);
    throw new Error(`no row ${instance}; the page shows: ${shown.replace(/\s+/g, ' ').slice(0, 600)}`, { cause: err });
  }
}

/** Milliseconds from typing into the search to the rows it leaves, measured in the page (two frames: painted). */
function searchRenderMs(page: Page, query: string, expectedFirst: string): Promise<number> {
  // A string: the test's own TypeScript knows no DOM.
  return page.evaluate(`new Promise((resolve, reject) => {
    const input = document.getElementById('instance-search');
    const started = performance.now();
    input.value = ${JSON.stringify(query)};
    input.dispatchEvent(new Event('input', { bubbles: true }));
    const check = () => {
      const first = document.querySelector('tr[data-instance]')?.getAttribute('data-instance');
      if (first === ${JSON.stringify(expectedFirst)}) requestAnimationFrame(() => resolve(performance.now() - started));
      else if (performance.now() - started > 5000) reject(new Error('first row ' + first));
      else requestAnimationFrame(check);
    };
    requestAnimationFrame(check);
  })`) as Promise<number>;
}

test.serial(
  'a thousand instances: the summary counts, filters by a click, search, pages; render time and DOM size',
  async (t) => {
    const page = await open(t);
    await login(page);
    await page.locator('tr[data-instance]').first().waitFor();
    // The list read and drawn again from another page: what opening the Instances page costs at 1000.
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'System log' }).click();
    await page.getByRole('heading', { name: 'System log', exact: true }).waitFor();
    const started = Date.now();
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Instances' }).click();
    await row(page, order[49]!);
    const openMs = Date.now() - started;

    t.is(await chipValue(page, 'all'), TOTAL);
    t.is(await chipValue(page, 'running'), 6);
    t.is(await chipValue(page, 'stopped'), TOTAL - 7);
    t.is(await chipValue(page, 'failed'), 1);
    t.is(await chipValue(page, 'disconnected'), 1);
    // By each proxy's health: the proxy of the tunnel whose server is down is down too, reported by frpc or not.
    t.is(await chipValue(page, 'proxiesDown'), 2);
    t.is(await chip(page, 'proxiesDown').locator('.chip-detail').textContent(), 'in 2 instances');
    const names = await rowNames(page);
    t.is(names.length, 50, 'one page of 50 rows');
    t.is(names[0], order[0]);
    const nodes = await domNodes(page);
    t.true(nodes < 2000, `${nodes} DOM elements`);
    t.true(openMs < 5000, `opened in ${openMs} ms`);
    await shot(page, 'instances-1000-desktop');
    t.deepEqual(await accessibilityViolations(page), [], 'instances at 1000');

    // Each count is a filter; a second click lifts it.
    for (const [key, only] of [
      ['failed', ['edge-0007']],
      ['disconnected', ['edge-0005']],
      ['proxiesDown', ['edge-0005', 'edge-0006']],
    ] as const) {
      await chip(page, key).click();
      const expected = order.filter((n) => (only as readonly string[]).includes(n));
      await waitFor(
        () => rowNames(page),
        (rows) => rows.join() === expected.join(),
      );
      t.is(await chip(page, key).getAttribute('aria-pressed'), 'true');
    }
    await chip(page, 'proxiesDown').click();
    await waitFor(
      () => rowNames(page),
      (rows) => rows.length === 50,
    );
    await chip(page, 'running').click();
    const running = ['edge-0001', 'edge-0002', 'edge-0003', 'edge-0004', 'edge-0005', 'edge-0006'];
    t.deepEqual(
      await rowNames(page),
      order.filter((n) => running.includes(n)),
    );
    t.is(await page.getByLabel('State').inputValue(), 'running', 'the State filter says so too');
    await page.getByRole('button', { name: 'Clear filters' }).click();

    // Search by name, measured in the page; a state beside it.
    const searchMs = await searchRenderMs(
      page,
      'edge-09',
      firstOf((n) => n.includes('edge-09')),
    );
    t.true(searchMs < 1000, `search drawn in ${searchMs.toFixed(0)} ms`);
    await page.getByRole('status').filter({ hasText: '100 of 1000 instances' }).waitFor();
    const clearMs = await searchRenderMs(page, '', order[0]!);
    await page.getByLabel('Search by name').fill('0000');
    await page.getByText('No instance matches the filter.').waitFor();
    await page.getByLabel('Search by name').fill('EDGE-000');
    await page.getByLabel('State').selectOption('stopped');
    await waitFor(
      () => rowNames(page),
      (rows) => rows.join() === order.filter((n) => n === 'edge-0008' || n === 'edge-0009').join(),
    );
    await page.getByRole('button', { name: 'Clear filters' }).click();
    // The whole list is back (as a user sees it) before the pages are turned.
    await page
      .getByRole('status')
      .filter({ hasText: /^1000 instances$/ })
      .waitFor();

    // Pages: next, last, and a larger page.
    const pager = page.getByRole('navigation', { name: 'Pages of instances' });
    await pager.getByText('Page 1 of 20').waitFor();
    await pager.getByRole('button', { name: 'Next' }).click();
    await pager.getByText('Page 2 of 20').waitFor();
    await row(page, order[50]!);
    await pager.getByRole('button', { name: 'Last' }).click();
    await row(page, order[999]!);
    t.is((await rowNames(page))[0], order[950]);
    await pager.getByLabel('Per page').selectOption('100');
    await pager.getByText('Page 1 of 10').waitFor();
    t.is((await rowNames(page)).length, 100);
    const nodes100 = await domNodes(page);
    await pager.getByLabel('Per page').selectOption('50');

    // Back from an instance, the list is where it was.
    await page.getByLabel('Search by name').fill('edge-070');
    await page.getByRole('link', { name: 'edge-0700', exact: true }).click();
    await page.getByRole('heading', { name: 'edge-0700', exact: true }).waitFor();
    await page.getByRole('link', { name: '← Instances' }).click();
    await row(page, 'edge-0700');
    t.is(await page.getByLabel('Search by name').inputValue(), 'edge-070');
    await page.getByRole('button', { name: 'Clear filters' }).click();

    t.log(
      `1000 instances: Instances page opened (list read + drawn) in ${openMs} ms; ${nodes} DOM elements at 50 rows, ` +
        `${nodes100} at 100; search drawn in ${searchMs.toFixed(0)} ms, cleared in ${clearMs.toFixed(0)} ms`,
    );
    noProblems(t, page);
  },
);

test.serial('a thousand instances at phone width', async (t) => {
  const page = await open(t, PHONE);
  await login(page);
  const first = order[0]!;
  await row(page, first);
  await chip(page, 'all')
    .locator('.chip-value', { hasText: String(TOTAL) })
    .waitFor();
  await shot(page, 'instances-1000-phone');
  t.deepEqual(await accessibilityViolations(page), [], 'instances at 1000, phone');
  const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
  t.true(width <= PHONE.width, `fits ${PHONE.width} px (${width})`);
  await page.getByRole('button', { name: `Actions for ${first}`, exact: true }).click();
  await page.getByRole('menu', { name: `Actions for ${first}` }).waitFor();
  await shot(page, 'instances-1000-phone-menu');
  const box = await page.getByRole('menu', { name: `Actions for ${first}` }).boundingBox();
  t.true(box !== null && box.x >= 0 && box.x + box.width <= PHONE.width, 'the menu stays on screen');
  noProblems(t, page);
});

test.serial('bulk actions on a selection: confirmed, one request each with the instance ids', async (t) => {
  const page = await open(t);
  await login(page);
  const bodies = new Map<string, string[]>();
  page.on('request', (req) => {
    const path = new URL(req.url()).pathname;
    if (req.method() === 'POST' && path.startsWith('/tunnelAct/instanceMgr/'))
      bodies.set(path, [...(bodies.get(path) ?? []), req.postData() ?? '']);
  });
  await page.getByLabel('Search by name').fill('edge-099');
  const selected = order.filter((n) => n.startsWith('edge-099'));
  await waitFor(
    () => rowNames(page),
    (rows) => rows.length === 10,
  );
  await page.getByLabel('Select the instances on this page').check();
  const bulk = page.getByRole('toolbar', { name: 'Selected instances' });
  await bulk.getByText('10 instances selected').waitFor();
  await shot(page, 'instances-1000-selected-desktop');
  const act = async (action: string, then: () => Promise<void>) => {
    await bulk.getByRole('button', { name: `${action}…`, exact: true }).click();
    const dialog = page.getByRole('dialog', { name: `${action} 10 instances?` });
    await dialog.getByText(`${selected.slice(0, 8).join(', ')} and 2 others.`).waitFor();
    await dialog.getByRole('button', { name: `${action} 10 instances` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `${action.toLowerCase()}: 10 of 10 instances ok` })
      .waitFor({ timeout: 30_000 });
    await then();
  };
  await act('Start', () =>
    chip(page, 'running').locator('.chip-value', { hasText: '16' }).waitFor({ timeout: 20_000 }),
  );
  await act('Stop', () =>
    chip(page, 'running').locator('.chip-value', { hasText: /^6$/ }).waitFor({ timeout: 20_000 }),
  );
  await act('Delete', () => page.getByText('No instance matches the filter.').waitFor({ timeout: 20_000 }));
  t.is(await page.getByRole('toolbar', { name: 'Selected instances' }).count(), 0, 'the selection is gone with them');
  await chip(page, 'all')
    .locator('.chip-value', { hasText: String(TOTAL - 10) })
    .waitFor();
  for (const path of ['start', 'stop', 'delete'].map((c) => `/tunnelAct/instanceMgr/${c}`)) {
    const sent = bodies.get(path) ?? [];
    t.is(sent.length, 1, `${path}: one request`);
    t.is(JSON.parse(sent[0]!).instanceIDs.length, 10, path);
  }
  noProblems(t, page);
});
