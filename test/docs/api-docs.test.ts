// docs/api.md is generated from the OpenAPI document (tools/api-docs.ts): a declaration changed without running the
// generator fails here, before the reference says something the daemon no longer does.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { API_DOCS_PATH, apiDocsSource } from '../../tools/api-docs.js';

test('docs/api.md is what the declarations make now (npm run api-docs writes it)', async (t) => {
  const committed = await readFile(API_DOCS_PATH, 'utf8');
  t.true(committed === apiDocsSource(), 'out of date: run npm run api-docs');
});

test('docs/api.md lists every route of the document, each with its access', async (t) => {
  const text = await readFile(API_DOCS_PATH, 'utf8');
  const { openApiDocument } = await import('../../src/http/openapi.js');
  const document = openApiDocument({ Version: '' }) as {
    paths: Record<string, Record<string, { 'x-access': string }>>;
  };
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      t.true(text.includes(`\n### ${method.toUpperCase()} ${path}\n`), `${method} ${path} has a section`);
      t.regex(text, new RegExp(`\\| \\[\`${path.replaceAll('.', '\\.')}\`\\]\\([^)]+\\) \\| ${op['x-access']}`), path);
    }
  }
});
