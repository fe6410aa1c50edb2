import { SETTING_KEYS, SETTINGS_TABLE, type SettingKey, type Settings } from './table.js';

// What is said about settings beyond each one's rule (src/settings/table.ts): their names, and which values are
// secrets.

/** Headers that only describe a body: their values ("application/json") are no secret, and masked would garble text. */
const DESCRIPTIVE_HEADERS = new Set(['content-type', 'accept', 'user-agent']);

/** The secret values the settings hold (the values of `Webhook.Headers`, but for descriptive headers): masked in all output. */
export function secretSettingValues(settings: { 'Webhook.Headers': Record<string, string> }): string[] {
  return Object.entries(settings['Webhook.Headers'])
    .filter(([name]) => !DESCRIPTIVE_HEADERS.has(name.toLowerCase()))
    .map(([, value]) => value);
}

export function isSettingKey(key: string): key is SettingKey {
  return Object.hasOwn(SETTINGS_TABLE, key);
}

/** The known key an unknown `key` was most likely meant to be: same letters in another case, or one or two edits away. */
export function closestSettingKey(key: string): SettingKey | undefined {
  const wanted = key.toLowerCase();
  let best: SettingKey | undefined;
  let bestDistance = 3;
  for (const known of SETTING_KEYS) {
    const distance = editDistance(wanted, known.toLowerCase(), bestDistance);
    if (distance < bestDistance) [best, bestDistance] = [known, distance];
  }
  return best;
}

/** `Watchdog.Enable (did you mean Watchdog.Enabled?), Mystery`: unknown keys, each with the key it was likely meant as. */
export function namedUnknownKeys(keys: readonly string[]): string {
  return keys
    .map((key) => {
      const near = closestSettingKey(key);
      return near ? `${key} (did you mean ${near}?)` : key;
    })
    .join(', ');
}

/** Levenshtein distance, or `limit` as soon as it is known to be at least that. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    if (Math.min(...row) >= limit) return limit;
    previous = row;
  }
  return Math.min(previous[b.length]!, limit);
}

export type SettingsPatch = Partial<Settings>;
