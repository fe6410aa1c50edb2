import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import test from 'ava';
import Koa from 'koa';
import { consoleAssets } from '../../../src/http/console-assets.js';
import { envelope } from '../../../src/http/envelope.js';
import { routeGate } from '../../../src/http/resource-router.js';
import { tempDir } from '../../helpers/daemon.js';

/** The console's middleware between the envelope and the API's gate (no API route here: everything else is 404). */
async function serve(dir: string): Promise<{ url: string; server: Server }> {
  const app = new Koa();
  app.use(envelope());
  app.use(consoleAssets(dir));
  app.use(routeGate([]));
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A request with its path sent as given (no `..` resolved) and its body not decompressed. */
function raw(url: string, method = 'GET', headers: Record<string, string> = {}): Promise<Raw> {
  const { hostname, port } = new URL(url);
  const path = url.slice(url.indexOf('/', 'http://'.length));
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const SCRIPT = `console.log(${JSON.stringify('x'.repeat(4000))});`;

test('the built files at their exact paths, with types, caching, gzip and the security headers', async (t) => {
  const dir = await tempDir('tunnelward-console-');
  await mkdir(join(dir, 'assets'));
  await writeFile(join(dir, 'index.html'), '<!doctype html><title>x</title>');
  await writeFile(join(dir, 'assets', 'app-ABCD1234.js'), SCRIPT);
  await writeFile(join(dir, 'assets', 'style-WXYZ5678.css'), 'body{}');
  await writeFile(join(dir, 'assets', 'notes.unknown'), 'not served');
  const { url, server } = await serve(dir);
  t.teardown(() => {
    server.close();
    return rm(dir, { recursive: true, force: true });
  });

  const index = await raw(`${url}/`);
  t.is(index.status, 200);
  t.is(index.headers['content-type'], 'text/html; charset=utf-8');
  t.is(index.headers['cache-control'], 'no-cache');
  t.regex(String(index.headers['content-security-policy']), /default-src 'self'.*script-src 'self'/);
  t.regex(String(index.headers['content-security-policy']), /frame-ancestors 'none'/);
  t.is(index.headers['x-content-type-options'], 'nosniff');
  t.is((await raw(`${url}/index.html`)).body.toString(), index.body.toString());

  const plain = await raw(`${url}/assets/app-ABCD1234.js`);
  t.is(plain.headers['content-type'], 'text/javascript; charset=utf-8');
  t.is(plain.headers['cache-control'], 'public, max-age=31536000, immutable');
  t.is(plain.headers['content-encoding'], undefined);
  t.is(plain.body.toString(), SCRIPT);
  const zipped = await raw(`${url}/assets/app-ABCD1234.js`, 'GET', { 'Accept-Encoding': 'gzip, deflate' });
  t.is(zipped.headers['content-encoding'], 'gzip');
  t.regex(String(zipped.headers.vary), /Accept-Encoding/);
  t.true(zipped.body.length < SCRIPT.length / 10);
  t.is(gunzipSync(zipped.body).toString(), SCRIPT);
  t.is((await raw(`${url}/assets/style-WXYZ5678.css`)).headers['content-type'], 'text/css; charset=utf-8');

  const head = await raw(`${url}/assets/app-ABCD1234.js`, 'HEAD');
  t.is(head.status, 200);
  t.is(head.body.length, 0);
  const again = await raw(`${url}/`, 'GET', { 'If-None-Match': String(index.headers.etag) });
  t.is(again.status, 304);

  // Anything else goes on to the API, which knows no such path.
  for (const [method, path] of [
    ['POST', '/'],
    ['DELETE', '/assets/app-ABCD1234.js'],
    ['GET', '/assets/notes.unknown'],
    ['GET', '/assets/'],
    ['GET', '/assets/../index.html'],
    ['GET', '/ASSETS/app-ABCD1234.js'],
    ['GET', '/index.html/'],
  ]) {
    const res = await raw(url + path, method);
    t.is(res.status, 404, `${method} ${path}`);
    t.deepEqual(JSON.parse(res.body.toString()), { success: false, message: `no such endpoint: ${method} ${path}` });
  }

  // The file list is read once: a file added later is not served.
  await writeFile(join(dir, 'assets', 'late-AAAA1111.js'), '1');
  t.is((await raw(`${url}/assets/late-AAAA1111.js`)).status, 404);
});

test('without a built console, / is the API 404 in the envelope', async (t) => {
  const { url, server } = await serve('/nonexistent/tunnelward/console');
  t.teardown(() => server.close());
  const res = await raw(`${url}/`);
  t.is(res.status, 404);
  t.deepEqual(JSON.parse(res.body.toString()), { success: false, message: 'no such endpoint: GET /' });
});
