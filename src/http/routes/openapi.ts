import type { RouteDeps } from '../app.js';
import { openApiJson } from '../openapi.js';
import { obj, str } from '../openapi-schemas.js';
import { operation } from '../operation.js';
import { ResourceRouter } from '../resource-router.js';

export const document = operation({
  method: 'get',
  path: '/openapi.json',
  tag: 'system',
  summary: 'This document',
  description: 'The OpenAPI 3.1 description of the API, as it is (not in the envelope).',
  access: 'public',
  ok: {
    description: 'The OpenAPI document',
    content: { 'application/json': { schema: obj({ openapi: str() }) } },
  },
});

export const operations = [document];

/** `GET /openapi.json` (public): the API's OpenAPI 3.1 document, as it is (not in the envelope). */
export function openApiRoutes({ guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('', guards);
  router.route(document, async (ctx) => {
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = openApiJson();
  });
  return router;
}
