import test from 'ava';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '../../../src/errors.js';
import { createLogger } from '../../../src/log/logger.js';
import { SystemLog } from '../../../src/log/system-log.js';
import { waitFor } from '../../helpers/instances.js';

/**
 * Where the loggers under test write: /dev/null, opened once and left open. The lines are read from the tee, which
 * receives exactly what is written; a descriptor closed under a logger's writer could be reused by another test
 * file's worker in this same process, and the writer's next write or close would hit that one.
 */
const DEV_NULL = openSync('/dev/null', 'w');

function capture() {
  const teed: string[] = [];
  const log = createLogger({ debug: false, fd: DEV_NULL, onEntry: (line) => teed.push(line) });
  return { log, teed };
}

test('secrets are censored at the top of an entry and one level down; other fields are kept', (t) => {
  const { log, teed } = capture();
  const fields = {
    username: 'alice',
    passwd: 'hunter2-top',
    token: 'tok-top',
    'auth.token': 'frp-secret-top',
    headers: { Authorization: 'Bearer header-secret' },
    user: { name: 'bob', password: 'nested-password', token: 'nested-token' },
    config: { 'auth.token': 'nested-frp-secret', serverAddr: 'frps.example' },
    list: ['plain', 'values'],
  };
  log.info(fields, 'with secrets');
  log.child({ component: 'x' }).info({ instanceID: 3, token: 'child-token' }, 'from a child');
  log.info({ instanceID: 4, state: 'running' }, 'without secrets');
  const err = Object.assign(new Error('refused'), { token: 'error-token' });
  log.error({ err }, 'an error that carries a secret');
  const text = teed.join('');
  for (const secret of ['hunter2', 'tok-top', 'frp-secret', 'header-secret', 'nested-', 'child-token', 'error-token'])
    t.false(text.includes(secret), `${secret} is not written`);
  const [first, child, plain] = teed.map((l) => JSON.parse(l));
  t.is(first.passwd, '[redacted]');
  t.is(first.token, '[redacted]');
  t.is(first['auth.token'], '[redacted]');
  t.is(first.headers, '[redacted]');
  t.deepEqual(first.user, { name: 'bob', password: '[redacted]', token: '[redacted]' });
  t.deepEqual(first.config, { 'auth.token': '[redacted]', serverAddr: 'frps.example' });
  t.is(first.username, 'alice');
  t.deepEqual(first.list, ['plain', 'values']);
  t.is(child.token, '[redacted]');
  t.is(child.component, 'x');
  t.is(child.instanceID, 3);
  t.like(plain, { instanceID: 4, state: 'running', msg: 'without secrets' });
  const logged = JSON.parse(teed[3]!);
  t.like(logged.err, { type: 'Error', message: 'refused', token: '[redacted]' });
  t.true(String(logged.err.stack).startsWith('Error: refused'), 'an error keeps its stack');
  t.is(err.token, 'error-token');
  t.is(teed.length, 4);
  t.is(fields.passwd, 'hunter2-top', "the caller's object is left as it was");
  t.deepEqual(fields.user, { name: 'bob', password: 'nested-password', token: 'nested-token' });
});

test('the system log keeps what was written and hands out entries to a reader, also ones written before it came', (t) => {
  const systemLog = new SystemLog(3);
  const tee = createLogger({ debug: false, fd: DEV_NULL, onEntry: systemLog.onLine });
  for (let i = 1; i <= 5; i++) tee.info({ instanceID: i }, `line ${i}`);
  t.deepEqual(
    systemLog.recent().map((e) => e.content),
    ['line 3 (instanceID=3)', 'line 4 (instanceID=4)', 'line 5 (instanceID=5)'],
    'only the last three are kept',
  );
  const seen: string[] = [];
  const sub = systemLog.entries$.subscribe((e) => seen.push(`${e.level} ${e.content}`));
  tee.warn('watched');
  sub.unsubscribe();
  tee.info('after');
  t.deepEqual(seen, ['2 watched']);
  t.is(systemLog.recent().at(-1)!.content, 'after');
});

test('pretty lines on the output, JSON to the tee: secrets redacted and control characters shown in both', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tunnelward-logger-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'out.log');
  const teed: string[] = [];
  const log = createLogger({ debug: false, fd: openSync(file, 'w'), format: 'pretty', onEntry: (l) => teed.push(l) });
  log.warn({ token: 'tok-secret', user: { passwd: 'nested-secret' }, username: 'x\u001b]0;owned\u0007' }, 'login');
  // The destination writes asynchronously: the line is there once it ends with a newline.
  const written = await waitFor(
    async () => readFileSync(file, 'utf8'),
    (text) => text.endsWith('\n'),
  );
  t.regex(
    written,
    /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} WARNING login \(token="\[redacted\]" user=.* username=.*\)\n$/,
  );
  t.false(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(written), JSON.stringify(written));
  t.is(JSON.parse(teed[0]!).token, '[redacted]', 'the tee gets the JSON line');
  for (const text of [written, teed.join('')]) t.false(/tok-secret|nested-secret/.test(text));
});

test('a refusal (AppError) is logged by its message and status only; an unexpected error keeps its stack', (t) => {
  const { log, teed } = capture();
  log.error({ err: new AppError(400, 'instance 3 cannot start: no variable T') }, 'could not restore an instance');
  log.error({ err: new TypeError('x is undefined') }, 'a failure nobody meant');
  const [refusal, failure] = teed.map((line) => JSON.parse(line) as { err: Record<string, unknown> });
  t.deepEqual(refusal!.err, { type: 'AppError', status: 400, message: 'instance 3 cannot start: no variable T' });
  t.false(teed[0]!.includes('dist/'), 'no file paths');
  t.is(failure!.err.type, 'TypeError');
  t.regex(String(failure!.err.stack), /TypeError: x is undefined\n\s+at /);
});
