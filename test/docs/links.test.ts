// Every link between README.md and docs/*.md leads somewhere: the file exists and, for a #part, a heading has that
// anchor. The pages others write at the same time (apply, fleet, prometheus) may be linked before they land.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import test from 'ava';
import { PACKAGE_ROOT } from '../../src/paths.js';

const PAGES = [
  'README.md',
  ...readdirSync(join(PACKAGE_ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
const LANDING = new Set(['docs/apply.md', 'docs/fleet.md', 'docs/prometheus.md']);

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replaceAll(' ', '-');

/** The text outside code blocks and code spans, where a link is a link. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');

function anchors(page: string): Set<string> {
  const text = prose(readFileSync(join(PACKAGE_ROOT, page), 'utf8'));
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!.trim())));
}

test('every relative link of README.md and docs/ leads to a page and a heading that exist', (t) => {
  const broken: string[] = [];
  let checked = 0;
  for (const page of PAGES) {
    const text = prose(readFileSync(join(PACKAGE_ROOT, page), 'utf8'));
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [path, part] = target!.split('#') as [string, string | undefined];
      const file = path === '' ? page : normalize(join(dirname(page), path));
      checked++;
      if (!existsSync(join(PACKAGE_ROOT, file))) {
        if (!LANDING.has(relative('.', file))) broken.push(`${page}: ${target} (no ${file})`);
        continue;
      }
      if (part !== undefined && file.endsWith('.md') && !anchors(file).has(part))
        broken.push(`${page}: ${target} (no heading #${part} in ${file})`);
    }
  }
  t.true(checked > 50, `${checked} links checked`);
  t.deepEqual(broken, []);
});
