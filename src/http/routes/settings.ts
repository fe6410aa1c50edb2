import type { Settings } from '../../settings/table.js';
import { isSettingKey, namedUnknownKeys } from '../../settings/schema.js';
import { badRequest, notFound } from '../../errors.js';
import { reply } from '../envelope.js';
import { body, queryParam } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

/** Shown in place of each webhook header value: headers often carry credentials. */
export const MASK = '********';

const maskHeaders = (headers: Record<string, string>) =>
  Object.fromEntries(Object.keys(headers).map((name) => [name, MASK]));

function shown(settings: Readonly<Settings>, key: keyof Settings): unknown {
  return key === 'Webhook.Headers' ? maskHeaders(settings[key]) : settings[key];
}

/** `?strict=true`: an unknown key fails the request (the CLI's and the console's form); the contract ignores it. */
function strictParam(value: string | undefined): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw badRequest('strict must be true or false');
}

/** /settings/*: an admin's. */
export function settingsRoutes({ settings, log, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/settings', guards);

  router.get('/get', 'admin', async (ctx) => {
    const key = queryParam(ctx, 'key');
    const current = settings.get();
    if (key === undefined || key === '') {
      const all = Object.fromEntries(Object.keys(current).map((k) => [k, shown(current, k as keyof Settings)]));
      reply(ctx, 'settings', all);
      return;
    }
    if (!isSettingKey(key)) throw notFound(`Unknown setting key: ${key}`);
    reply(ctx, key, { key, value: shown(current, key) });
  });

  router.post('/set', 'admin', async (ctx) => {
    if ((ctx.request as { body?: unknown }).body === undefined) {
      throw badRequest('request body is required: a JSON object of settings to change');
    }
    const patch = { ...body(ctx) };
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
      strict: strictParam(queryParam(ctx, 'strict')),
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
