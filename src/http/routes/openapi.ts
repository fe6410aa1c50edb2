import type { RouteDeps } from '../app.js';
import { openApiJson } from '../openapi.js';
import { ResourceRouter } from '../resource-router.js';

/** `GET /openapi.json` (public): the API's OpenAPI 3.1 document, as it is (not in the envelope). */
export function openApiRoutes({ guards }: RouteDeps): ResourceRouter {
  const router = new ResourceRouter('', guards);
  router.get('/openapi.json', 'public', async (ctx) => {
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = openApiJson();
  });
  return router;
}
