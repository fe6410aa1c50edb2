import { z } from 'zod';
import type { ApiKey } from '../../accounts/api-key-service.js';
import { API_KEY_SCOPE_RULES, API_KEY_SCOPES, apiKeyNameSchema, USER_TYPES } from '../../accounts/rules.js';
import { forbidden } from '../../errors.js';
import { DEFAULTS } from '../../settings/defaults.js';
import { formatIso } from '../../util/time.js';
import { viaApiKey } from '../auth.js';
import { reply } from '../envelope.js';
import { arrayOf, int, obj, ok, schema, str } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import { idField, idParam } from '../params.js';
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
  scope: key.scope,
  ratePerMinute: rate,
  createdAt: formatIso(key.createdAt),
  createdBy: key.createdBy,
  expiresAt: isoOrNull(key.expiresAt),
  lastUsedAt: isoOrNull(key.lastUsedAt),
});

export const createApiKey = operation({
  method: 'post',
  path: '/apiKeyMgr/create',
  tag: 'apiKeys',
  summary: 'Create a personal API key',
  description:
    "For yourself; a superuser for anyone (userID). The key is in this reply only: the service keeps a SHA-256 hash of it. Its role defaults to the lower of the creator's and the owner's, and may be neither above the creator's nor above the owner's. Needs a password login: an API key cannot create keys. A ratePerMinute above the per-token limit (RateLimit.PerToken) needs a superuser. A metrics-scoped key (for a scraper such as Prometheus) may read GET /metrics alone, without X-Timestamp, and needs the admin role or higher; its role defaults to admin at most.",
  access: 'visitor',
  body: z.strictObject({
    name: apiKeyNameSchema,
    userID: idField.optional().describe('the owner; yourself when left out'),
    role: z.enum(USER_TYPES).nullish(),
    scope: z
      .enum(API_KEY_SCOPES)
      .nullish()
      .describe(
        `what it may be used for (${API_KEY_SCOPES.map((scope) => `${scope}: ${API_KEY_SCOPE_RULES[scope]}`).join('; ')}); all when left out`,
      ),
    expiresIn: z
      .int()
      .min(1)
      .max(DEFAULTS.apiKeyMaxLifetimeSecs)
      .nullish()
      .describe('seconds until it expires; never when left out'),
    ratePerMinute: z
      .int()
      .min(1)
      .max(1_000_000)
      .nullish()
      .describe('requests per minute; the per-token limit when left out'),
  }),
  ok: ok('Created; the key is shown this once', schema('NewApiKey')),
  errors: {
    400: 'A missing or unknown field, or a bad name, expiry or rate.',
    403: "A role above your own or the owner's; a metrics scope with a role below admin; another user's key and the caller is not a superuser; a rate above the per-token limit and the caller is not a superuser; or called with an API key.",
    404: 'No such user.',
    409: `The owner has a key of that name, or already ${DEFAULTS.apiKeysPerUser} keys.`,
  },
});

export const listApiKeys = operation({
  method: 'get',
  path: '/apiKeyMgr/list',
  tag: 'apiKeys',
  summary: "A user's API keys, without their secrets",
  description: 'Your own; a superuser may name any user. Expired keys are listed until revoked.',
  access: 'visitor',
  query: z.object({
    userID: idParam('whose keys; yourself when left out').optional(),
  }),
  ok: ok('The keys, oldest first', arrayOf(schema('ApiKey'))),
  errors: {
    400: 'userID not a positive integer.',
    403: "Another user's keys, and the caller is not a superuser.",
    404: 'No such user.',
  },
});

export const revokeApiKey = operation({
  method: 'post',
  path: '/apiKeyMgr/revoke',
  tag: 'apiKeys',
  summary: 'Revoke an API key; it stops working at once',
  description:
    "Your own, or any for a superuser; by keyID, or by name (with userID for another user's key). A key may revoke itself. Streams opened with it close with 4401.",
  access: 'visitor',
  body: z
    .strictObject({
      keyID: z.string().nullish().describe('the public id of the key'),
      name: apiKeyNameSchema.nullish(),
      userID: idField.optional().describe('the owner, with name; yourself when left out'),
    })
    .refine(
      (body) => (body.keyID == null) !== (body.name == null),
      "give keyID or name (with userID for another user's key)",
    )
    .meta({
      description: 'keyID, or name.',
      oneOf: [
        { required: ['keyID'], properties: { keyID: { type: 'string' } }, not: { required: ['name'] } },
        { required: ['name'], properties: { name: { type: 'string' } }, not: { required: ['keyID'] } },
      ],
    }),
  ok: ok('Revoked', obj({ keyID: str(), name: str(), userID: int() })),
  errors: {
    400: 'Neither or both of keyID and name, or an unknown field.',
    403: "Another user's key by name, and the caller is not a superuser.",
    404: "No such key (another user's key id is unknown to anyone but a superuser).",
  },
});

export const operations = [createApiKey, listApiKeys, revokeApiKey];

/** /apiKeyMgr/*: personal API keys, for their owners; a superuser's for anyone. */
export function apiKeyRoutes({ apiKeys, guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('/apiKeyMgr', guards);

  router.route(createApiKey, async (ctx, { body }) => {
    const caller = ctx.state.auth;
    // A leaked key must not be able to mint others that outlive its own revocation.
    if (viaApiKey(caller)) throw forbidden('creating an API key needs a password login, not an API key');
    const { key, apiKey, owner } = await apiKeys.create(caller.user, body.userID ?? caller.user.id, {
      name: body.name,
      role: body.role ?? undefined,
      scope: body.scope ?? undefined,
      expiresInSecs: body.expiresIn ?? undefined,
      ratePerMinute: body.ratePerMinute ?? undefined,
    });
    reply(ctx, `API key ${apiKey.name} created for ${owner.username}; it is shown only in this reply`, {
      key,
      ...keyData(apiKey, owner.username, apiKeys.rateOf(apiKey)),
    });
  });

  router.route(listApiKeys, async (ctx, { query }) => {
    const userID = query.userID ?? ctx.state.auth.user.id;
    const { owner, keys } = apiKeys.list(ctx.state.auth.user, userID);
    reply(
      ctx,
      `${keys.length} API keys of ${owner.username}`,
      keys.map((k) => keyData(k, owner.username, apiKeys.rateOf(k))),
    );
  });

  router.route(revokeApiKey, async (ctx, { body }) => {
    const user = ctx.state.auth.user;
    const key = await apiKeys.revoke(
      user,
      body.keyID != null ? { keyId: body.keyID } : { userId: body.userID ?? user.id, name: body.name! },
    );
    reply(ctx, `API key ${key.name} revoked`, { keyID: key.id, name: key.name, userID: key.userId });
  });

  return router;
}
