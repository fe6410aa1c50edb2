// The console's and the CLI's types are generated from the document (tools/api-types.ts): a declaration changed
// without `npm run api-types` fails here, before a client compiles against what the daemon no longer says.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { API_TYPES_PATH, apiTypesSource } from '../../../tools/api-types.js';

test('src/generated/api-types.ts is what the declarations make now (npm run api-types writes it)', async (t) => {
  const committed = await readFile(API_TYPES_PATH, 'utf8');
  t.true(committed === (await apiTypesSource()), 'out of date: run npm run api-types');
});
