import test from 'ava';
import { dispose, exchangeRaw, startDaemon, type Daemon } from '../../helpers/daemon.js';

let daemon: Daemon;
test.before(async () => {
  daemon = await startDaemon();
});
test.after.always(() => dispose(daemon));

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits what the daemon sent back into its responses, each as status, headers and body. */
function responses(raw: string): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete response: ${JSON.stringify(rest)}`);
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const length = Number(headers['content-length']);
    const bodyStart = end + 4;
    answers.push({
      status: Number(statusLine!.split(' ')[1]),
      headers,
      body: rest.slice(bodyStart, bodyStart + length),
    });
    rest = rest.slice(bodyStart + length);
  }
  return answers;
}

/** Asserts the one answer is a failure envelope with this status and message, closing the connection. */
function assertEnvelope(t: import('ava').ExecutionContext, raw: string, status: number, message: string) {
  const all = responses(raw);
  t.is(all.length, 1, raw);
  const [answer] = all;
  t.is(answer!.status, status, raw);
  t.regex(answer!.headers['content-type']!, /^application\/json/);
  t.is(answer!.headers.connection, 'close');
  t.deepEqual(JSON.parse(answer!.body), { success: false, message });
}

test('a 100 KB header: 431 in the envelope', async (t) => {
  const raw = await exchangeRaw(
    daemon.url,
    `GET /system/getStatus HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(100 * 1024)}\r\n\r\n`,
  );
  assertEnvelope(t, raw, 431, 'request headers are too large');
});

test('a malformed request line: 400 in the envelope', async (t) => {
  assertEnvelope(t, await exchangeRaw(daemon.url, 'GARBAGE\r\n\r\n'), 400, 'malformed HTTP request');
  assertEnvelope(
    t,
    await exchangeRaw(daemon.url, 'GET /system/getStatus HTTP/9.9\r\n\r\n'),
    400,
    'malformed HTTP request',
  );
});

test('a method the HTTP parser does not know: 400 in the envelope', async (t) => {
  const raw = await exchangeRaw(daemon.url, 'FROB /system/getStatus HTTP/1.1\r\nHost: localhost\r\n\r\n');
  assertEnvelope(t, raw, 400, 'malformed HTTP request');
});

test('a malformed header after a good request on the same connection: the good answer, then the envelope', async (t) => {
  const raw = await exchangeRaw(
    daemon.url,
    'GET /system/getStatus HTTP/1.1\r\nHost: localhost\r\n\r\nGET /system/getStatus HTTP/1.1\r\nBad Header\r\n\r\n',
  );
  const [first, second, ...more] = responses(raw);
  t.is(first!.status, 200);
  t.is(JSON.parse(first!.body).data.Status, 'Online');
  t.is(second!.status, 400);
  t.is(second!.headers.connection, 'close');
  t.deepEqual(JSON.parse(second!.body), { success: false, message: 'malformed HTTP request' });
  t.deepEqual(more, []);
  t.is((await daemon.get('/system/getStatus')).status, 200, 'the daemon still answers');
});
