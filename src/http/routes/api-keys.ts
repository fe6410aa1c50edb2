import type { ApiKey } from '../../accounts/api-key-service.js';
import { isUserType } from '../../accounts/rules.js';
import { badRequest, forbidden } from '../../errors.js';
import { formatIso } from '../../util/time.js';
import { viaApiKey } from '../auth.js';
import { reply } from '../envelope.js';
import { body, onlyFields, optionalInt, optionalString, queryParam, requiredId, requiredString } from '../params.js';
import type { RouteDeps } from '../app.js';
import { ResourceRouter } from '../resource-router.js';

const isoOrNull = (ms: number | null) => (ms === null ? null : formatIso(ms));

/** A key as every reply shows it: never its secret. */
const keyData = (key: ApiKey, username: string, rate: number) => ({
  keyID: key.id,
  name: key.name,
  userID: key.userId,
  username,
  role: key.role,
  ratePerMinute: rate,
  createdAt: formatIso(key.createdAt),
  createdBy: key.createdBy,
  expiresAt: isoOrNull(key.expiresAt),
  lastUsedAt: isoOrNull(key.lastUsedAt),
});

/** /apiKeyMgr/*: personal API keys, for their owners; a superuser's for anyone. */
export function apiKeyRoutes({ apiKeys, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/apiKeyMgr', guards);

  router.post('/create', 'visitor', async (ctx) => {
    const caller = ctx.state.auth;
    // A leaked key must not be able to mint others that outlive its own revocation.
    if (viaApiKey(caller)) throw forbidden('creating an API key needs a password login, not an API key');
    const fields = body(ctx);
    onlyFields(fields, ['name', 'userID', 'role', 'expiresIn', 'ratePerMinute']);
    const name = requiredString(fields, 'name');
    const userID = fields.userID === undefined ? caller.user.id : requiredId(fields, 'userID');
    const role = optionalString(fields, 'role');
    if (role !== undefined && !isUserType(role)) throw badRequest('role must be superuser, admin or visitor');
    const { key, apiKey, owner } = await apiKeys.create(caller.user, userID, {
      name,
      role,
      expiresInSecs: optionalInt(fields, 'expiresIn'),
      ratePerMinute: optionalInt(fields, 'ratePerMinute'),
    });
    reply(ctx, `API key ${apiKey.name} created for ${owner.username}; it is shown only in this reply`, {
      key,
      ...keyData(apiKey, owner.username, apiKeys.rateOf(apiKey)),
    });
  });

  router.get('/list', 'visitor', async (ctx) => {
    const raw = queryParam(ctx, 'userID');
    const userID = raw === undefined ? ctx.state.auth.user.id : requiredId({ userID: raw }, 'userID');
    const { owner, keys } = apiKeys.list(ctx.state.auth.user, userID);
    reply(
      ctx,
      `${keys.length} API keys of ${owner.username}`,
      keys.map((k) => keyData(k, owner.username, apiKeys.rateOf(k))),
    );
  });

  router.post('/revoke', 'visitor', async (ctx) => {
    const fields = body(ctx);
    onlyFields(fields, ['keyID', 'name', 'userID']);
    const keyId = optionalString(fields, 'keyID');
    const name = optionalString(fields, 'name');
    if ((keyId === undefined) === (name === undefined))
      throw badRequest("give keyID or name (with userID for another user's key)");
    const user = ctx.state.auth.user;
    const key = await apiKeys.revoke(
      user,
      keyId !== undefined
        ? { keyId }
        : { userId: fields.userID === undefined ? user.id : requiredId(fields, 'userID'), name: name! },
    );
    reply(ctx, `API key ${key.name} revoked`, { keyID: key.id, name: key.name, userID: key.userId });
  });

  return router;
}
