import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Middleware } from 'koa';
import { COMPRESSIBLE, serveAssets, TYPES, type Asset } from './console-assets.js';

/**
 * The API reference as a page: `GET /docs/api` renders the daemon's own `/openapi.json` with Swagger UI
 * (swagger-ui-dist, Apache-2.0), whose files the daemon serves itself: nothing is loaded from elsewhere. Public, as
 * the document is. Sent with the console's Content-Security-Policy: the page's own script is a file, not inline.
 */
export const API_REFERENCE_PATH = '/docs/api';

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

// Paths are relative, so the page works behind a reverse proxy that serves the daemon under a prefix:
// from /docs/api, `api/x` is /docs/api/x and `../openapi.json` is /openapi.json.
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>tunnelward API reference</title>
    <link rel="stylesheet" href="api/swagger-ui.css">
    <link rel="stylesheet" href="api/page.css">
  </head>
  <body>
    <main id="api"></main>
    <script src="api/swagger-ui-bundle.js"></script>
    <script src="api/page.js"></script>
  </body>
</html>
`;

// Every request "Try it out" sends is stamped with X-Timestamp, which every operation but the public ones needs;
// the token is given with "Authorize". The spec validator badge would call out to another site: left out.
const PAGE_SCRIPT = `window.ui = SwaggerUIBundle({
  url: '../openapi.json',
  dom_id: '#api',
  deepLinking: true,
  validatorUrl: null,
  docExpansion: 'list',
  requestInterceptor: function (request) {
    request.headers['X-Timestamp'] = String(Date.now());
    return request;
  },
});
`;

const PAGE_STYLE = `body { margin: 0; }
`;

function asset(file: Asset['file'], ext: string): Asset {
  return { file, type: TYPES[ext]!, cacheControl: 'no-cache', compressible: COMPRESSIBLE.has(ext) };
}

/** The page, its script and style, and Swagger UI's bundle and style, by path. */
export function apiReferenceAssets(): Middleware {
  const base = API_REFERENCE_PATH;
  return serveAssets(
    new Map([
      [base, asset({ text: PAGE }, '.html')],
      [`${base}/page.js`, asset({ text: PAGE_SCRIPT }, '.js')],
      [`${base}/page.css`, asset({ text: PAGE_STYLE }, '.css')],
      [`${base}/swagger-ui-bundle.js`, asset(join(SWAGGER_UI_DIR, 'swagger-ui-bundle.js'), '.js')],
      [`${base}/swagger-ui.css`, asset(join(SWAGGER_UI_DIR, 'swagger-ui.css'), '.css')],
    ]),
  );
}
