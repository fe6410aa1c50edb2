import type { Context } from 'koa';
import { z } from 'zod';
import { badRequest } from '../errors.js';
import type { Access } from './auth.js';
import type { InstanceAction } from '../accounts/access.js';
import type { ApiKeyScope } from '../accounts/rules.js';
import { body as jsonBody, queryParam } from './params.js';

/**
 * An HTTP operation, declared once next to its route: what the router validates a request with, and what the OpenAPI
 * document says of it (src/http/openapi.ts builds the document from these declarations). A body or query that the
 * schema accepts reaches the handler parsed; one it refuses is a 400 that names the field and the rule it breaks.
 */
export interface Operation<Body extends z.ZodType = z.ZodType, Query extends z.ZodObject = z.ZodObject> {
  method: 'get' | 'post';
  /** The full path, as the contract has it. */
  path: string;
  access: Access;
  /**
   * The API key scope, besides `all`, that may call it too, without `X-Timestamp` (a key of that scope may call
   * nothing else); the role of `access` is still needed.
   */
  keyScope?: Exclude<ApiKeyScope, 'all'>;
  /** What the operation does to the instance it names, which the access rule judges beyond the role (see may). */
  instanceAccess?: InstanceAction;
  tag: string;
  summary: string;
  description?: string;
  /** A GET's parameters: each from the query string, or an `X-<name>` header (strings, as sent). */
  query?: Query;
  /** A POST's JSON body. */
  body?: Body;
  /** The 200 response, as the document shows it. */
  ok: Record<string, unknown>;
  /** Statuses this operation answers beyond those every operation of its method and access level may. */
  errors?: Partial<Record<number, string>>;
}

/** What a handler receives: the body and query as their schemas parsed them. */
export interface Input<Body extends z.ZodType, Query extends z.ZodObject> {
  body: z.output<Body>;
  query: z.output<Query>;
}

/** Declares an operation (identity; it keeps the schemas' types for the handler). */
export const operation = <
  Body extends z.ZodType = z.ZodNever,
  Query extends z.ZodObject = z.ZodObject<Record<never, z.ZodType>>,
>(
  op: Operation<Body, Query>,
): Operation<Body, Query> => op;

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'a boolean (true or false)',
  object: 'an object',
  record: 'an object',
  array: 'an array',
  null: 'null',
};

function orList(values: readonly unknown[]): string {
  const words = values.map(String);
  return words.length <= 1 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** Each rule zod checks, said as the end of a sentence whose subject is the field ("... must be a string"). */
const ruleOf: z.core.$ZodErrorMap = (issue) => {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.input === null) return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}, not null`;
      return `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
    case 'too_small':
      if (issue.origin === 'string') return `must be at least ${issue.minimum} characters long`;
      if (issue.origin === 'array') return `must have at least ${issue.minimum} items`;
      return `must be at least ${issue.minimum}`;
    case 'too_big':
      if (issue.origin === 'string') return `must be at most ${issue.maximum} characters long`;
      if (issue.origin === 'array') return `may have at most ${issue.maximum} items`;
      return `must be at most ${issue.maximum}`;
    case 'invalid_value':
      return `must be ${orList(issue.values)}`;
    case 'invalid_union':
      // A discriminated union names its choices (`type must be configFile, systemConfig, ...`).
      return 'options' in issue && Array.isArray(issue.options) ? `must be ${orList(issue.options)}` : 'is not valid';
    case 'invalid_format':
      return issue.format === 'regex' ? `must match ${issue.pattern}` : `must be a valid ${issue.format}`;
    default:
      return 'is not valid';
  }
};

const pathOf = (path: readonly PropertyKey[]): string =>
  path.map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`)).join('');

/** The first problem zod found, as one sentence: the field, then the rule (`passwd must contain a digit (0-9)`). */
export function problemOf(error: z.ZodError, schema: z.ZodType, what = 'request body'): string {
  const issue = error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    if (issue.path.length === 0 && schema instanceof z.ZodObject) {
      return `unknown field ${issue.keys[0]}: this operation takes ${Object.keys(schema.shape).join(', ')}`;
    }
    return `unknown field ${issue.path.length > 0 ? `${pathOf(issue.path)}.` : ''}${issue.keys[0]}`;
  }
  if (issue.path.length > 0) return `${pathOf(issue.path)} ${issue.message}`;
  // A rule about the whole body (one field or another) says it all itself.
  return issue.code === 'custom' ? issue.message : `${what} ${issue.message}`;
}

/** Parses `value` with `schema`, or throws the 400 that names the first problem. */
export function parseOr400<S extends z.ZodType>(schema: S, value: unknown, what?: string): z.output<S> {
  const result = schema.safeParse(value, { error: ruleOf });
  if (!result.success) throw badRequest(problemOf(result.error, schema, what));
  return result.data;
}

/** The operation's input from the request: its query parameters and JSON body, each checked by its schema. */
export function readInput<Body extends z.ZodType, Query extends z.ZodObject>(
  op: Operation<Body, Query>,
  ctx: Context,
): Input<Body, Query> {
  let query = {} as z.output<Query>;
  if (op.query) {
    const raw: Record<string, string> = {};
    for (const name of Object.keys(op.query.shape)) {
      const value = queryParam(ctx, name);
      if (value !== undefined) raw[name] = value;
    }
    query = parseOr400(op.query, raw);
  }
  const body = (op.body ? parseOr400(op.body, jsonBody(ctx)) : undefined) as z.output<Body>;
  return { body, query };
}

// ---- The document's view of a declaration ----

type Json = Record<string, unknown>;

/** Schemas that declarations name (zod's `.meta({ id })`), for the document's components. */
export const NAMED_SCHEMAS: Record<string, Json> = {};

/** The JSON Schema of what a client sends (the input side of any transform); named parts go to NAMED_SCHEMAS. */
export function jsonSchemaOf(schema: z.ZodType): Json {
  const {
    $schema: _,
    $defs,
    ...rest
  } = z.toJSONSchema(schema, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
  }) as Json;
  // zod refers to a named part inside the schema it made; in the document, the part is a component.
  const placed = (json: unknown): Json =>
    JSON.parse(JSON.stringify(json).replaceAll('"#/$defs/', '"#/components/schemas/')) as Json;
  for (const [name, part] of Object.entries(($defs ?? {}) as Record<string, Json>)) NAMED_SCHEMAS[name] = placed(part);
  return placed(rest);
}

/** The OpenAPI parameters of a query schema: one per key, required unless optional. */
export function queryParameters(query: z.ZodObject): Json[] {
  const schema = jsonSchemaOf(query) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(schema.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    return {
      name,
      in: 'query',
      required: schema.required?.includes(name) ?? false,
      description: `${description ? `${String(description)} ` : ''}(also accepted as an X-${name} header)`,
      schema: rest,
    };
  });
}
