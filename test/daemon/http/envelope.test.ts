import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import Koa from 'koa';
import { conflict } from '../../../src/errors.js';
import { envelope } from '../../../src/http/envelope.js';

/** An app whose one handler throws what it is given, behind the envelope; what reaches `app.on('error')` is kept. */
async function throwing(thrown: () => unknown) {
  const app = new Koa();
  const logged: unknown[] = [];
  app.on('error', (err) => logged.push(err));
  app.use(envelope());
  app.use(() => {
    throw thrown();
  });
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text(), logged };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const INTERNAL = JSON.stringify({ success: false, message: 'internal error' });

test('anything but an AppError is a 500 in the envelope, with no message, stack or detail of it, and is logged', async (t) => {
  const unknowns: Array<[string, () => unknown]> = [
    ['an Error', () => new Error('cannot open /var/secret/path: token=abc')],
    ['a TypeError', () => new TypeError("Cannot read properties of undefined (reading 'x')")],
    [
      'an Error that says it may be shown',
      () => Object.assign(new Error('db password wrong'), { status: 500, expose: true }),
    ],
    ['a library error of status 503', () => Object.assign(new Error('upstream detail'), { status: 503 })],
    ['a string', () => 'raw detail'],
    ['null', () => null],
    ['undefined', () => undefined],
    ['a plain object', () => ({ message: 'object detail', stack: 'at somewhere (file.js:1:1)' })],
  ];
  for (const [what, thrown] of unknowns) {
    const res = await throwing(thrown);
    t.is(res.status, 500, what);
    t.regex(res.type ?? '', /^application\/json/, what);
    t.is(res.text, INTERNAL, what);
    t.is(res.logged.length, 1, `${what} is logged once`);
    t.true(res.logged[0] instanceof Error, `${what} is logged as an Error`);
  }
});

test('an AppError keeps its status and message', async (t) => {
  const res = await throwing(() => conflict('an instance named x already exists'));
  t.is(res.status, 409);
  t.is(res.text, JSON.stringify({ success: false, message: 'an instance named x already exists' }));
  t.deepEqual(res.logged, [], 'a client error is not logged as a failure');
});

test("a body-reading library's error says what went wrong with the body: aborted, short, not JSON", async (t) => {
  const libraryError = (message: string, type: string) =>
    Object.assign(new Error(message), { status: 400, expose: true, type });
  const cases: Array<[Error, string]> = [
    [libraryError('request aborted', 'request.aborted'), 'the request was aborted before its body was read whole'],
    [
      libraryError('request size did not match content length', 'request.size.invalid'),
      'the request body is not as long as its Content-Length says',
    ],
    [libraryError('Unexpected token } in JSON', 'entity.parse.failed'), 'request body is not valid JSON'],
  ];
  for (const [err, message] of cases) {
    const res = await throwing(() => err);
    t.is(res.status, 400, message);
    t.is(res.text, JSON.stringify({ success: false, message }));
  }
});
