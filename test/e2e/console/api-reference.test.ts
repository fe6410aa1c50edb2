import test from 'ava';
import type { Browser } from 'playwright-core';
import { CONSOLE_CSP } from '../../../src/http/console-assets.js';
import { DESKTOP, launchBrowser, noProblems, openConsole, shot } from '../../helpers/console.js';
import { dispose, startDaemon, type Daemon } from '../../helpers/daemon.js';

/** GET /docs/api: the daemon's OpenAPI document rendered by the Swagger UI it serves itself, in a real Chromium. */

let browser: Browser;
let daemon: Daemon;

test.before(async () => {
  [browser, daemon] = await Promise.all([launchBrowser(), startDaemon()]);
});

test.after.always(async () => {
  await browser?.close();
  if (daemon) await dispose(daemon);
});

test('the API reference page shows the routes of the document, from the daemon alone, under its strict policy', async (t) => {
  const page = await openConsole(t, browser, daemon, DESKTOP, '/docs/api');
  const origins = new Set<string>();
  page.on('request', (request) => origins.add(new URL(request.url()).origin));
  await page.reload();

  const list = page.getByText('/tunnelAct/instanceMgr/list', { exact: true }).first();
  await list.waitFor();
  t.true(
    await page
      .getByRole('heading', { name: /tunnelward/ })
      .first()
      .isVisible(),
  );
  await shot(page, 'api-reference-top');

  // A public operation tried from the page: the request goes to the daemon and its answer is shown.
  const status = page.locator('.opblock').filter({ has: page.getByText('/system/getStatus', { exact: true }) });
  await status.locator('.opblock-summary').click();
  await status.getByRole('button', { name: 'Try it out' }).click();
  await status.getByRole('button', { name: 'Execute' }).click();
  await status.locator('.responses-table.live-responses-table .response-col_status', { hasText: '200' }).waitFor();
  t.regex(await status.locator('.live-responses-table .microlight').first().innerText(), /"success": true/);
  await shot(page, 'api-reference-desktop');

  t.deepEqual([...origins], [daemon.url], 'every request went to the daemon');
  noProblems(t, page);
});

test('the page and its files are sent with the console policy; the bundle gzipped', async (t) => {
  const page = await fetch(`${daemon.url}/docs/api`);
  t.is(page.status, 200);
  t.is(page.headers.get('content-type'), 'text/html; charset=utf-8');
  t.is(page.headers.get('content-security-policy'), CONSOLE_CSP);
  t.regex(await page.text(), /<script src="api\/swagger-ui-bundle\.js"><\/script>/);
  const bundle = await fetch(`${daemon.url}/docs/api/swagger-ui-bundle.js`, { headers: { 'Accept-Encoding': 'gzip' } });
  t.is(bundle.status, 200);
  t.is(bundle.headers.get('content-encoding'), 'gzip');
  t.is(bundle.headers.get('content-security-policy'), CONSOLE_CSP);
  t.true((await bundle.text()).includes('SwaggerUIBundle'));
  // Not a directory: any other path under it is the API's 404.
  const other = await fetch(`${daemon.url}/docs/api/index.html`);
  t.is(other.status, 404);
  t.false(((await other.json()) as { success: boolean }).success);
});
