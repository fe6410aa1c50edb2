import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Middleware } from 'koa';
import { PACKAGE_ROOT } from '../paths.js';

/** Where `npm run build` writes the web console. */
export const CONSOLE_DIR = join(PACKAGE_ROOT, 'dist', 'console');

/**
 * Sent with every file of the console: its scripts and styles come from this origin only, it talks to this origin
 * only (`connect-src 'self'` covers same-origin ws: and wss:), and no other site may frame it.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': CONSOLE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

export const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

export const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

/** esbuild's `[name]-[hash]`: a name whose content never changes, cached for a year. */
const HASHED = /-[A-Z0-9]{8}\.[a-z0-9]+$/;

export interface Asset {
  /** The file it is read from, or its text, made by the daemon. */
  file: string | { text: string };
  type: string;
  cacheControl: string;
  compressible: boolean;
  /** Read on first request, then kept: the whole console is a few dozen kilobytes. */
  loaded?: { body: Buffer; gzip: Buffer | undefined; etag: string };
}

function listFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...listFiles(path));
    else if (entry.isFile()) files.push(path);
  }
  return files;
}

/** The URL path of each built file (`/` for index.html), read once: files added later are not served. */
function catalogue(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return assets;
  for (const file of listFiles(dir)) {
    const ext = extname(file).toLowerCase();
    const type = TYPES[ext];
    if (!type) continue;
    const path = '/' + relative(dir, file).split(sep).join('/');
    const asset: Asset = {
      file,
      type,
      cacheControl: HASHED.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache',
      compressible: COMPRESSIBLE.has(ext),
    };
    assets.set(path, asset);
    if (path === '/index.html') assets.set('/', asset);
  }
  return assets;
}

function load(asset: Asset): NonNullable<Asset['loaded']> {
  if (!asset.loaded) {
    const body = typeof asset.file === 'string' ? readFileSync(asset.file) : Buffer.from(asset.file.text);
    const gzip = asset.compressible && body.length > 1024 ? gzipSync(body, { level: 9 }) : undefined;
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    asset.loaded = { body, gzip: gzip && gzip.length < body.length ? gzip : undefined, etag };
  }
  return asset.loaded;
}

/**
 * Serves the web console's static files: GET and HEAD of the exact paths of the files built into `dir` (read once,
 * now), `/` being index.html. Every other request goes on to the API's routes, so a path that is not a built file
 * still gets the API's 404 envelope, and without a build `/` is such a 404. No route is added: the console talks
 * to the API like any other client.
 */
export function consoleAssets(dir: string = CONSOLE_DIR): Middleware {
  return serveAssets(catalogue(dir));
}

/**
 * GET and HEAD of the exact paths in `assets`, each with the console's security headers, an ETag and gzip when the
 * client takes it; any other request goes on.
 */
export function serveAssets(assets: ReadonlyMap<string, Asset>): Middleware {
  return async (ctx, next) => {
    const asset = ctx.method === 'GET' || ctx.method === 'HEAD' ? assets.get(ctx.path) : undefined;
    if (!asset) return next();
    let loaded;
    try {
      loaded = load(asset);
    } catch {
      // Removed since the start (a rebuild in progress): as if it had never been built.
      return next();
    }
    ctx.set(SECURITY_HEADERS);
    ctx.set('Cache-Control', asset.cacheControl);
    ctx.set('ETag', loaded.etag);
    if (asset.compressible) ctx.vary('Accept-Encoding');
    ctx.status = 200;
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.type = asset.type;
    if (loaded.gzip && ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = loaded.gzip;
    } else {
      ctx.body = loaded.body;
    }
  };
}
