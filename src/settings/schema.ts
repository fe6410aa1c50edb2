import { closestName, withSuggestions } from '../util/closest.js';
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
  return closestName(key, SETTING_KEYS);
}

/** `Watchdog.Enable (did you mean Watchdog.Enabled?), Mystery`: unknown keys, each with the key it was likely meant as. */
export function namedUnknownKeys(keys: readonly string[]): string {
  return withSuggestions(keys, SETTING_KEYS);
}

export type SettingsPatch = Partial<Settings>;
