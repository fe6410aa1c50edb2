// The API reference in Markdown (docs/api.md), generated from the OpenAPI document the daemon serves (itself built
// from the operations' declarations, src/http/operation.ts): every route with its access, parameters, body, answer
// and errors, then the schemas they name. test/docs/api-docs.test.ts fails when docs/api.md is out of date.
// `npm run api-docs` writes it again. The same document is served as a page at GET /docs/api.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openApiDocument } from '../src/http/openapi.js';
import { PACKAGE_ROOT } from '../src/paths.js';

export const API_DOCS_PATH = join(PACKAGE_ROOT, 'docs', 'api.md');

type Schema = Record<string, any>;

const SCHEMA_REF = '#/components/schemas/';
const RESPONSE_REF = '#/components/responses/';

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`. */
const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replaceAll(' ', '-');

/** Text fit for one table cell. */
const cell = (text: string) =>
  text
    .replaceAll('\\', '\\\\')
    .replaceAll('|', '\\|')
    .replace(/\s*\n\s*/g, ' ');

const code = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
};

const refName = (ref: string) => ref.slice(SCHEMA_REF.length);
const link = (name: string) => `[${name}](#${anchor(name)})`;

/** A schema in a few words: its type, a link to a named schema, its values. */
function typeText(schema: Schema | undefined): string {
  if (!schema || Object.keys(schema).length === 0) return 'any';
  if (schema.$ref) return link(refName(schema.$ref as string));
  if ('const' in schema) return code(schema.const);
  if (schema.enum) {
    const values = schema.enum as unknown[];
    return values.length <= 12
      ? values.map(code).join(', ')
      : `one of ${values.length}: ${values.slice(0, 6).map(code).join(', ')}, ...`;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const parts = (schema[key] as Schema[] | undefined)?.filter((part) => part.type || part.$ref || part.enum);
    if (parts && parts.length > 0) return [...new Set(parts.map(typeText))].join(' or ');
  }
  if (schema.allOf) return (schema.allOf as Schema[]).map(typeText).join(' and ');
  if (Array.isArray(schema.type)) return (schema.type as string[]).join(' or ');
  switch (schema.type) {
    case 'array':
      return `array of ${typeText(schema.items as Schema)}`;
    case 'object':
      if (schema.additionalProperties && typeof schema.additionalProperties === 'object')
        return `object of ${typeText(schema.additionalProperties as Schema)}`;
      return 'object';
    case 'integer':
    case 'number': {
      const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
      const range =
        minimum !== undefined && maximum !== undefined && maximum < 2 ** 32
          ? ` ${minimum}-${maximum}`
          : minimum !== undefined
            ? ` >= ${minimum}`
            : '';
      return `${schema.type as string}${range}`;
    }
    case 'string': {
      const notes = [
        schema.format as string | undefined,
        schema.pattern && (schema.pattern as string).length <= 40 ? code(schema.pattern) : undefined,
        schema.maxLength !== undefined ? `at most ${schema.maxLength as number} characters` : undefined,
      ].filter(Boolean);
      return notes.length > 0 ? `string (${notes.join(', ')})` : 'string';
    }
    default:
      return (schema.type as string | undefined) ?? 'any';
  }
}

/** An object schema's fields, those of every part of an allOf included. */
function fields(schema: Schema): Array<{ name: string; schema: Schema; required: boolean }> {
  if (schema.allOf) return (schema.allOf as Schema[]).flatMap((part) => (part.$ref ? [] : fields(part)));
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries((schema.properties as Record<string, Schema> | undefined) ?? {}).map(([name, field]) => ({
    name,
    schema: field,
    required: required.has(name),
  }));
}

function fieldTable(schema: Schema): string[] {
  const rows = fields(schema);
  if (rows.length === 0) return [];
  return [
    '| field | type | required | description |',
    '|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| \`${row.name}\` | ${cell(typeText(row.schema))} | ${row.required ? 'yes' : ''} | ${cell((row.schema.description as string | undefined) ?? '')} |`,
    ),
  ];
}

/** What an object schema adds beside its fields: the schemas it extends, which of its fields go together. */
function shapeNotes(schema: Schema): string[] {
  const notes: string[] = [];
  const extended = ((schema.allOf as Schema[] | undefined) ?? []).filter((part) => part.$ref);
  if (extended.length > 0) notes.push(`With the fields of ${extended.map(typeText).join(' and ')}.`);
  const choices = (schema.oneOf as Schema[] | undefined)?.map((part) => part.required as string[] | undefined);
  if (choices?.every((required) => required?.length === 1))
    notes.push(`Exactly one of ${choices.map((required) => code(required![0])).join(', ')}.`);
  return notes;
}

/** A schema's description: its fields when it is an object, else its type. */
function schemaBody(schema: Schema): string[] {
  const table = fieldTable(schema);
  const notes = shapeNotes(schema);
  if (table.length === 0) return [`Type: ${typeText(schema)}.`, ...notes];
  return [...notes, ...(notes.length > 0 ? [''] : []), ...table];
}

/** The answer's data (inside the envelope), or the content as it is. */
function answer(response: Schema): string {
  const said = (response.description as string).replace(/\.$/, '');
  const [type, media] = Object.entries((response.content as Record<string, Schema> | undefined) ?? {})[0] ?? [];
  const schema = media?.schema as Schema | undefined;
  const parts = (schema?.allOf as Schema[] | undefined) ?? [];
  if (parts[0]?.$ref === `${SCHEMA_REF}Envelope`) {
    const data = (parts[1]?.properties as Record<string, Schema> | undefined)?.data;
    return `${said}: the envelope${data ? `, \`data\` ${typeText(data)}` : ''}.`;
  }
  if (schema?.$ref) return `${said}: ${typeText(schema)}.`;
  return `${said}${type ? ` (\`${type}\`${schema ? `, ${typeText(schema)}` : ''})` : ''}.`;
}

function operationSection(document: Schema, method: string, path: string, op: Schema): string[] {
  const lines = [`### ${method.toUpperCase()} ${path}`, '', `${op.summary as string}.`, ''];
  if (op.description) lines.push(op.description as string, '');
  const parameters = (op.parameters as Schema[] | undefined) ?? [];
  if (parameters.length > 0) {
    lines.push(
      '**Parameters**',
      '',
      '| name | in | type | required | description |',
      '|---|---|---|---|---|',
      ...parameters.map(
        (p) =>
          `| \`${p.name as string}\` | ${p.in as string} | ${cell(typeText(p.schema as Schema))} | ${p.required ? 'yes' : ''} | ${cell((p.description as string | undefined) ?? '')} |`,
      ),
      '',
    );
  }
  const body = (op.requestBody as Schema | undefined)?.content?.['application/json']?.schema as Schema | undefined;
  if (body) lines.push('**Body** (JSON)', '', ...schemaBody(body), '');
  if (op['x-websocket-messages'])
    lines.push(`**Messages**: ${typeText(op['x-websocket-messages'] as Schema)}, one JSON object each.`, '');
  const responses = op.responses as Record<string, Schema>;
  for (const [status, response] of Object.entries(responses)) {
    if (status === '200' || status === '101') lines.push(`**Answer** ${status}: ${answer(response)}`, '');
  }
  const errors = Object.entries(responses).filter(([status]) => status !== '200' && status !== '101');
  if (errors.length > 0) {
    lines.push('**Errors**', '', '| status | when |', '|---|---|');
    for (const [status, response] of errors) {
      const shared = response.$ref
        ? (document.components.responses[(response.$ref as string).slice(RESPONSE_REF.length)] as Schema)
        : response;
      lines.push(`| ${status} | ${cell((response.description ?? shared.description) as string)} |`);
    }
    lines.push('');
  }
  return lines;
}

const HEADER = `<!-- Generated by \`npm run api-docs\` from the OpenAPI document (GET /openapi.json): do not edit.
The document is built from the operations' declarations (src/http/operation.ts); change those, then run the script. -->`;

/** docs/api.md for the document as the code declares it now (the version left out: it changes with every release). */
export function apiDocsSource(): string {
  const document = openApiDocument({ Version: '' }) as Schema;
  const operations: Array<{ tag: string; method: string; path: string; op: Schema }> = [];
  for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(methods)) {
      operations.push({ tag: (op.tags as string[])[0]!, method, path, op });
    }
  }
  const tags = document.tags as Array<{ name: string; description: string }>;
  const lines = [
    HEADER,
    '',
    '# API reference',
    '',
    'Every route of the HTTP API, generated from the OpenAPI 3.1 document each daemon serves at `GET /openapi.json`.',
    'The daemon also shows it as a page, with requests that can be tried from it: `GET /docs/api`',
    '(`http://127.0.0.1:7600/docs/api` on the defaults). The rules behind it in words: [http.md](http.md).',
    '',
    document.info.description as string,
    '',
    '## Routes',
    '',
    '| method | path | access | what it does |',
    '|---|---|---|---|',
  ];
  for (const tag of tags) {
    for (const { method, path, op } of operations.filter((o) => o.tag === tag.name)) {
      const heading = `${method.toUpperCase()} ${path}`;
      const access = `${op['x-access'] as string}${op['x-websocket'] ? ' (WebSocket)' : ''}`;
      lines.push(
        `| ${method.toUpperCase()} | [\`${path}\`](#${anchor(heading)}) | ${access} | ${cell(op.summary as string)} |`,
      );
    }
  }
  lines.push('');
  for (const tag of tags) {
    lines.push(`## ${tag.name}`, '', `${tag.description}.`, '');
    for (const { method, path, op } of operations.filter((o) => o.tag === tag.name)) {
      lines.push(...operationSection(document, method, path, op));
    }
  }
  lines.push('## Schemas', '', 'The shapes the routes above take and answer, by name.', '');
  for (const [name, schema] of Object.entries(document.components.schemas as Record<string, Schema>)) {
    lines.push(`### ${name}`, '');
    if (schema.description) lines.push(schema.description as string, '');
    lines.push(...schemaBody(schema), '');
  }
  return lines.join('\n').replace(/\n+$/, '\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(API_DOCS_PATH, apiDocsSource());
  console.log(`wrote ${API_DOCS_PATH}`);
}
