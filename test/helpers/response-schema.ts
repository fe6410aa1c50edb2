// Every answer the tests get is checked against the operation the served OpenAPI document declares for it: the
// status must be one it lists, and the body must match that status's schema. A drift between what the daemon says
// and what it documents fails the test that saw it.
import { Ajv2020 } from 'ajv/dist/2020.js';
import { openApiDocument } from '../../src/http/openapi.js';

type Json = Record<string, any>;

const doc = openApiDocument() as Json;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(doc, 'openapi');

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** A response object, its `$ref` (to components.responses) followed. */
function responseOf(operation: Json, status: number): { response: Json; at: string } | undefined {
  const key = operation.responses?.[String(status)] ? String(status) : operation.responses?.default ? 'default' : null;
  if (key === null) return undefined;
  const response = operation.responses[key] as Json;
  const ref = typeof response.$ref === 'string' ? /^#\/components\/responses\/(.+)$/.exec(response.$ref)?.[1] : null;
  if (ref) return { response: doc.components.responses[ref], at: `components/responses/${pointer(ref)}` };
  return { response, at: `${key}` };
}

/**
 * What is wrong with this answer per the document, or undefined when it conforms. Paths the document does not
 * hold (a test's deliberately wrong path) and answers that are not JSON are not checked here.
 */
export function responseDrift(method: string, url: string, status: number, body: unknown): string | undefined {
  const path = url.split('?')[0]!;
  const operation = doc.paths?.[path]?.[method.toLowerCase()] as Json | undefined;
  if (!operation) return undefined;
  const found = responseOf(operation, status);
  if (!found) {
    const said = (body as { message?: unknown } | null)?.message;
    const documented = Object.keys(operation.responses ?? {}).join(', ');
    return `${method} ${path}: status ${status} is not documented (${documented}); it said: ${String(said)}`;
  }
  const schema = found.response.content?.['application/json']?.schema;
  if (!schema) return undefined;
  const at = found.at.startsWith('components/')
    ? `openapi#/${found.at}/content/application~1json/schema`
    : `openapi#/paths/${pointer(path)}/${method.toLowerCase()}/responses/${pointer(found.at)}/content/application~1json/schema`;
  const validate = ajv.getSchema(at);
  if (!validate) return `${method} ${path}: no schema at ${at}`;
  if (validate(body)) return undefined;
  const errors = (validate.errors ?? [])
    .slice(0, 6)
    .map((e) => `${e.instancePath || '/'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`)
    .join('; ');
  return `${method} ${path} ${status}: the body does not match its documented schema: ${errors}`;
}

/** What is wrong with a request body per the document's schema for the operation; undefined when it conforms. */
export function requestDrift(method: string, path: string, body: unknown): string | undefined {
  const operation = doc.paths?.[path]?.[method.toLowerCase()] as Json | undefined;
  if (!operation) return `${method} ${path} is not documented`;
  const at = `openapi#/paths/${pointer(path)}/${method.toLowerCase()}/requestBody/content/application~1json/schema`;
  const validate = ajv.getSchema(at);
  if (!validate) return `${method} ${path}: no request schema`;
  if (validate(body)) return undefined;
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
}
