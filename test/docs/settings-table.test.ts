// The operator guide's settings table says what the settings table of the code says (src/settings/table.ts): every
// key once, its default, and whether it applies only at the next start.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { APPLY_AT_NEXT_START, defaultSettings, SETTING_KEYS, type SettingKey } from '../../src/settings/table.js';

const GUIDE = 'docs/operator.md';

interface Row {
  keys: string[];
  defaults: string[];
  applies: string;
}

/** The rows of the table whose header is `| key | type | default | applies |`. */
function rows(): Row[] {
  const lines = readFileSync(join(PACKAGE_ROOT, GUIDE), 'utf8').split('\n');
  const start = lines.indexOf('| key | type | default | applies |');
  if (start < 0) throw new Error(`${GUIDE} has no settings table`);
  const found: Row[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const [key, , fallback, applies] = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim());
    const keys = [...key!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const defaults = fallback!.startsWith('empty')
      ? keys.map(() => '')
      : [...fallback!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).slice(0, keys.length);
    found.push({ keys, defaults, applies: applies! });
  }
  return found;
}

test(`${GUIDE} lists every setting once, with the default the code has`, (t) => {
  const table = rows();
  const listed = table.flatMap((row) => row.keys);
  t.deepEqual([...listed].sort(), [...SETTING_KEYS].sort(), 'the same keys, each once');
  const defaults = defaultSettings('<data dir>');
  for (const row of table) {
    row.keys.forEach((key, i) => {
      const value = defaults[key as SettingKey];
      const shown = row.defaults[i];
      t.true(
        shown === JSON.stringify(value) || (typeof value === 'string' && shown === value),
        `${key}: the guide says ${shown}, the code ${JSON.stringify(value)}`,
      );
    });
  }
});

test(`${GUIDE} says "next start" of exactly the settings that apply at the next start`, (t) => {
  for (const row of rows()) {
    for (const key of row.keys) {
      t.is(/^next start(?! of each)/.test(row.applies), APPLY_AT_NEXT_START.has(key as SettingKey), key);
    }
  }
});
