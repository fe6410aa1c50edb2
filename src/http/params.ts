import type { Context } from 'koa';
import { z } from 'zod';
import { badRequest } from '../errors.js';

export type Fields = Record<string, unknown>;

/** The JSON body as an object; anything else is a 400. */
export function body(ctx: Context): Fields {
  const b = (ctx.request as { body?: unknown }).body;
  if (b === undefined || b === null) return {};
  if (typeof b !== 'object' || Array.isArray(b)) throw badRequest('request body must be a JSON object');
  return b as Fields;
}

export function optionalString(fields: Fields, name: string): string | undefined {
  const v = fields[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw badRequest(`${name} must be a string`);
  return v;
}

/** An id sent as a string: 1 to 15 digits, not all zeros (the check and the document's pattern). */
export const ID_STRING_PATTERN = '^(?=[0-9]{1,15}$)0*[1-9][0-9]*$';
const ID_STRING = new RegExp(ID_STRING_PATTERN);

const missing = (input: unknown) => input === undefined || input === null || input === '';

/** An id in a request: an integer, or a string holding one (the contract sends ids both ways); parsed to a number. */
const POSITIVE_ID = {
  error: (issue: { input?: unknown }) => (missing(issue.input) ? 'is required' : 'must be a positive integer'),
};
export const idField = z
  .union([z.int(POSITIVE_ID).min(1, POSITIVE_ID), z.string(POSITIVE_ID).regex(ID_STRING, POSITIVE_ID)], POSITIVE_ID)
  .describe('an id: an integer, or a string holding one')
  .transform(Number);

/** An id in a query string (or its X- header): digits, parsed to a number. */
export const idParam = (description: string) =>
  z
    .string()
    .min(1, 'is required')
    .regex(ID_STRING, 'must be a positive integer')
    .describe(description)
    .transform(Number);

/** A GET parameter: the query string first, then an `X-<Name>` header. */
export function queryParam(ctx: Context, name: string): string | undefined {
  const q = ctx.query[name];
  if (typeof q === 'string') return q;
  if (Array.isArray(q)) throw badRequest(`${name} is given more than once`);
  return ctx.get(`X-${name}`) || undefined;
}

/** Most ids one request may name (a list longer than any host's instances is a mistake, not a request). */
export const MAX_IDS = 100_000;
