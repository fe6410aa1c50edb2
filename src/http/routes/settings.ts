import { z } from 'zod';
import { SETTING_KEYS, type Settings } from '../../settings/table.js';
import { isSettingKey, namedUnknownKeys } from '../../settings/schema.js';
import { badRequest, notFound } from '../../errors.js';
import { reply } from '../envelope.js';
import { documentedBy, ok, schema } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

/** Shown in place of each webhook header value: headers often carry credentials. */
export const MASK = '********';

const maskHeaders = (headers: Record<string, string>) =>
  Object.fromEntries(Object.keys(headers).map((name) => [name, MASK]));

function shown(settings: Readonly<Settings>, key: keyof Settings): unknown {
  return key === 'Webhook.Headers' ? maskHeaders(settings[key]) : settings[key];
}

export const getSettings = operation({
  method: 'get',
  path: '/settings/get',
  tag: 'settings',
  summary: 'Read every setting, or one',
  description: 'Values of Webhook.Headers are shown as ********.',
  access: 'admin',
  query: z.object({
    // Any string: an unknown key is a 404 that names it, as the contract has it.
    key: z.string().optional().describe('one setting to read; every setting when omitted').meta({ enum: SETTING_KEYS }),
  }),
  ok: ok('Without key: every setting; with key: that one', { oneOf: [schema('Settings'), schema('Setting')] }),
  errors: { 404: 'Unknown setting key: <key>.' },
});

export const setSettings = operation({
  method: 'post',
  path: '/settings/set',
  tag: 'settings',
  summary: 'Change settings',
  description:
    'The file is written atomically, then the change applies; ListenAddr, ListenPort and InitSystem take effect at the next start, as the message says.',
  access: 'admin',
  query: z.object({
    // `?strict=true`: an unknown key fails the request (the CLI's and the console's form); the contract ignores it.
    strict: z
      .enum(['true', 'false'])
      .optional()
      .describe(
        'true: an unknown key fails the request (400) and nothing changes; otherwise, as the contract says, it is logged as a warning and ignored, and the message names it',
      ),
  }),
  // Each value is checked by the settings themselves (src/settings/table.ts), which say what the document shows.
  body: documentedBy('SettingsPatch'),
  ok: ok(
    'Saved: the message names the settings changed, and each unknown key ignored with the key it most likely meant',
  ),
  errors: {
    400: 'No body, an invalid value or a null, or with strict=true an unknown key (with the key it most likely meant); the message names the key.',
    403: 'An admin changing a setting that names a program tunnelward runs or a directory where it writes what it runs: a superuser only.',
    409: 'A program setting that names no executable file only root can change (the message says which path and why).',
    500: 'Failed to save config: nothing changed.',
  },
});

export const operations = [getSettings, setSettings];

/** /settings/*: an admin's. */
export function settingsRoutes({ settings, log, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/settings', guards);

  router.route(getSettings, async (ctx, { query }) => {
    const { key } = query;
    const current = settings.get();
    if (key === undefined || key === '') {
      const all = Object.fromEntries(Object.keys(current).map((k) => [k, shown(current, k as keyof Settings)]));
      reply(ctx, 'settings', all);
      return;
    }
    if (!isSettingKey(key)) throw notFound(`Unknown setting key: ${key}`);
    reply(ctx, key, { key, value: shown(current, key) });
  });

  router.route(setSettings, async (ctx, { query, body: given }) => {
    if ((ctx.request as { body?: unknown }).body === undefined) {
      throw badRequest('request body is required: a JSON object of settings to change');
    }
    const patch: Record<string, unknown> = { ...given };
    // A header sent back masked, as /settings/get shows it, keeps its current value.
    const headers = patch['Webhook.Headers'];
    if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
      const current = settings.value('Webhook.Headers');
      patch['Webhook.Headers'] = Object.fromEntries(
        Object.entries(headers).map(([name, value]) => [
          name,
          value === MASK && Object.hasOwn(current, name) ? current[name] : value,
        ]),
      );
    }
    const result = await settings.set(patch, {
      strict: query.strict === 'true',
      superuser: ctx.state.auth.user.type === 'superuser',
    });
    if (result.changed.length > 0) log.info({ keys: result.changed }, 'settings changed');
    for (const key of result.ignored) log.warn({ key }, 'unknown setting key ignored');
    const parts = [result.changed.length > 0 ? `settings saved: ${result.changed.join(', ')}` : 'no setting changed'];
    if (result.atNextStart.length > 0) parts.push(`${result.atNextStart.join(', ')} take effect at the next start`);
    if (result.ignored.length > 0) {
      const s = result.ignored.length > 1 ? 's' : '';
      parts.push(`ignored unknown setting key${s}: ${namedUnknownKeys(result.ignored)}`);
    }
    reply(ctx, parts.join('; '));
  });

  return router;
}
