import test from 'ava';
import { openSync, closeSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log/logger.js';
import { SystemLog } from '../../src/log/system-log.js';

/** Every line a logger writes, as the file behind its descriptor and its tee see them. */
function capture(debug = false) {
  const dir = mkdtempSync(join(tmpdir(), 'tunnelward-logger-'));
  const fd = openSync(join(dir, 'out.log'), 'w');
  const teed: string[] = [];
  const log = createLogger({ debug, fd, onEntry: (line) => teed.push(line) });
  return {
    log,
    teed,
    /** What reached the file once the lines the tee saw are all there (pino writes asynchronously). */
    async written(): Promise<string> {
      const file = join(dir, 'out.log');
      const expected = teed.join('').length;
      for (let waited = 0; readFileSync(file, 'utf8').length < expected && waited < 5000; waited += 10)
        await new Promise((r) => setTimeout(r, 10));
      const text = readFileSync(file, 'utf8');
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
      return text;
    },
  };
}

test('secrets are censored at the top of an entry and one level down; other fields are kept', async (t) => {
  const { log, teed, written } = capture();
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
  const text = await written();
  for (const secret of ['hunter2', 'tok-top', 'frp-secret', 'header-secret', 'nested-', 'child-token'])
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
  t.is(teed.join(''), text, 'the file has the lines the tee saw');
  t.is(fields.passwd, 'hunter2-top', "the caller's object is left as it was");
  t.deepEqual(fields.user, { name: 'bob', password: 'nested-password', token: 'nested-token' });
});

test('the system log keeps what was written and hands out entries to a reader, also ones written before it came', (t) => {
  const systemLog = new SystemLog(3);
  const tee = createLogger({ debug: false, fd: openSync('/dev/null', 'w'), onEntry: systemLog.onLine });
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
