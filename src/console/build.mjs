// Builds the web console into dist/console: esbuild bundles main.tsx (Preact, JSX) and styles.css, minified, under
// content-hashed names in dist/console/assets/; index.html is written last, pointing at them. The daemon serves
// these files as they are (src/http/console-assets.ts). Fails when the assets pass the size budget.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const out = join(root, 'dist', 'console');
const assets = join(out, 'assets');
/** Everything the browser downloads, gzipped. */
const BUDGET_GZIP_BYTES = 150 * 1024;

await rm(out, { recursive: true, force: true });
await mkdir(assets, { recursive: true });

const result = await build({
  entryPoints: { app: join(here, 'main.tsx'), style: join(here, 'styles.css') },
  outdir: assets,
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((path) => join(root, relative(root, path)));
const script = outputs.find((path) => /app-[A-Z0-9]+\.js$/.test(path));
const style = outputs.find((path) => /style-[A-Z0-9]+\.css$/.test(path));
if (!script || !style) throw new Error(`unexpected esbuild outputs: ${outputs.join(', ')}`);

// The icon gets a hashed name like the rest, so every asset can be cached for good.
const icon = await readFile(join(here, 'icon.svg'));
const iconName = `icon-${createHash('sha256').update(icon).digest('hex').slice(0, 8).toUpperCase()}.svg`;
await writeFile(join(assets, iconName), icon);

const template = await readFile(join(here, 'index.html'), 'utf8');
const html = template
  .replace('%SCRIPT%', basename(script))
  .replace('%STYLE%', basename(style))
  .replace('%ICON%', iconName);
await writeFile(join(out, 'index.html'), html);

let total = 0;
const lines = [];
for (const file of [join(out, 'index.html'), script, style, join(assets, iconName)]) {
  const body = await readFile(file);
  const gzipped = gzipSync(body, { level: 9 }).length;
  total += gzipped;
  lines.push(
    `  ${relative(out, file).padEnd(28)} ${String(body.length).padStart(7)} B  ${String(gzipped).padStart(6)} B gzip`,
  );
}
if (process.env.CONSOLE_BUILD_VERBOSE) console.log(`dist/console:\n${lines.join('\n')}\n  total ${total} B gzip`);
if (total > BUDGET_GZIP_BYTES) {
  console.error(`the console's assets are ${total} B gzipped, over the budget of ${BUDGET_GZIP_BYTES} B`);
  process.exit(1);
}
