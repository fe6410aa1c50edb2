import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { parseFrpcLine, systemEntryFromPino } from '../../../src/log/log-entries.js';
import { formatLogTimestamp } from '../../../src/util/time.js';
import { freePort, REAL_FRPC } from '../../helpers/frp.js';

const RAW_CONTROL = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/;

test("the real frpc's coloured lines are read with their level and without their colour codes", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tunnelward-colours-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const config = join(dir, 'frpc.toml');
  // Nobody listens on the server's port: frpc logs at each level it colours, then gives up (loginFailExit).
  await writeFile(
    config,
    `serverAddr = "127.0.0.1"\nserverPort = ${await freePort()}\nlog.level = "debug"\n` +
      `[[proxies]]\nname = "ssh"\ntype = "tcp"\nlocalPort = 22\nremotePort = 6022\n`,
  );
  const proc = spawn(REAL_FRPC, ['-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let raw = '';
  proc.stdout.on('data', (chunk: Buffer) => (raw += chunk.toString()));
  await new Promise((resolve) => proc.on('close', resolve));
  t.true(raw.includes('\x1b[1;34m') && raw.includes('\x1b[1;33m'), 'frpc coloured its output');
  const entries = raw.split('\n').flatMap((line) => parseFrpcLine(line, 0) ?? []);
  const stamped = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \[([TDIWE])\] \[[\w./-]+:\d+\] (.*)$/;
  const plain = raw
    .replace(/\x1b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((line) => stamped.test(line));
  t.true(plain.length >= 3, raw);
  const levels: Record<string, string> = { T: 'DEBUG', D: 'DEBUG', I: 'INFO', W: 'WARN', E: 'ERROR' };
  t.deepEqual(
    // Lines frpc did not stamp (its last words on a failed login) are stamped when read: at 0 here.
    entries.filter((e) => e.timestamp !== formatLogTimestamp(0)).map((e) => [e.level, e.timestamp, e.content]),
    plain.map((line) => {
      const [, at, level, content] = stamped.exec(line)!;
      return [levels[level!], at, content];
    }),
  );
  t.true(
    entries.some((e) => e.level === 'WARN' && /connect to server error/.test(e.content)),
    'a warning among them',
  );
  for (const e of entries) t.false(RAW_CONTROL.test(e.content), JSON.stringify(e.content));
});

test('a line of output loses every control sequence and control character but tab', (t) => {
  const line =
    '2026-11-25 10:00:00.000 [I] [a.go:1] osc\x1b]0;title\x07 st\x1b]52;c;aGk=\x1b\\ c1\x9d8;;x\x9c ' +
    'dcs\x1bP1$r\x1b\\ sos\x1bXs\x1b\\ pm\x1b^p\x1b\\ apc\x1b_a\x1b\\ csi\x1b[2J\x1b[?1049h c1csi\x9b31m ' +
    'esc\x1b7\x1b(B\x1bc bare\x01\x08\x0b\x0c\x0e\x1f\x7f\x80\x85\x9a tab\tend\x1b]2;never ended';
  const entry = parseFrpcLine(line, 0)!;
  t.is(entry.level, 'INFO');
  t.is(entry.content, 'osc st c1 dcs sos pm apc csi c1csi esc bare tab\tend');
});

test("the daemon's own entries lose the control sequences of what was logged", (t) => {
  const line = JSON.stringify({
    level: 30,
    time: 0,
    msg: 'audit: \x1b]0;pwned\x07who\x9b2J login: failed (401)',
    audit: { user: '\x1b]0;pwned\x07who\x9b2J' },
  });
  const entry = systemEntryFromPino(line)!;
  t.false(RAW_CONTROL.test(entry.content), JSON.stringify(entry.content));
  t.true(entry.content.startsWith('audit: who login: failed (401) (audit='), entry.content);
});
