import { closeSync, constants, openSync, write, writeSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import pino from 'pino';
import { InstanceLogs, tailOf } from '../../../actors/instance-logs.js';
import type { InstanceLogEntry } from '../../../src/log/log-entries.js';
import { tempDir } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/instances.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('pipes read side by side keep their own text, a character split between two writes included', async (t) => {
  const dir = await tempDir('tunnelward-logs-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const logs = new InstanceLogs(dir, () => ({ maxBytes: 1 << 20, files: 1 }), pino({ enabled: false }));
  const seen = new Map<number, InstanceLogEntry[]>();
  const writers = new Map<number, number>();
  for (const id of [1, 2]) {
    const channel = logs.channel(id);
    seen.set(id, []);
    channel.entries$.subscribe((entries) => seen.get(id)!.push(...entries));
    const pipe = await channel.prepareForTunnel();
    writers.set(id, openSync(pipe, constants.O_WRONLY));
  }
  const euro = Buffer.from('€'); // three bytes
  // Interleaved writes: the first half of a character on one pipe, a whole line on the other, then the rest.
  writeSync(
    writers.get(1)!,
    Buffer.concat([Buffer.from('2026-11-25 10:00:00.000 [I] [a.go:1] prix 5'), euro.subarray(0, 2)]),
  );
  writeSync(writers.get(2)!, '2026-11-25 10:00:00.000 [W] [b.go:2] grüße aus pipe zwei\n');
  await pause(50);
  writeSync(writers.get(1)!, Buffer.concat([euro.subarray(2), Buffer.from(' hors taxe\n')]));
  // Longer than a pipe holds and than one read: written from the thread pool while the loop goes on reading.
  const long = `2026-11-25 10:00:01.000 [I] [b.go:3] ${'x'.repeat(100_000)}\n`;
  await new Promise((resolve, reject) => write(writers.get(2)!, long, (err) => (err ? reject(err) : resolve(null))));
  for (let waited = 0; (seen.get(1)!.length < 1 || seen.get(2)!.length < 2) && waited < 5000; waited += 10)
    await pause(10);
  t.deepEqual(
    seen.get(1)!.map((e) => e.content),
    ['prix 5€ hors taxe'],
  );
  t.deepEqual(
    seen.get(2)!.map((e) => [e.level, e.content.length > 50 ? e.content.length : e.content]),
    [
      ['WARN', 'grüße aus pipe zwei'],
      ['INFO', 100_000],
    ],
    'a line longer than one read arrives whole',
  );
  for (const fd of writers.values()) closeSync(fd);
  for (const id of [1, 2]) logs.channel(id).close();
});

test('what a tunnel writes is kept and published without control sequences, its colour codes included', async (t) => {
  const dir = await tempDir('tunnelward-logs-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const logs = new InstanceLogs(dir, () => ({ maxBytes: 1 << 20, files: 1 }), pino({ enabled: false }));
  const channel = logs.channel(1);
  const seen: InstanceLogEntry[] = [];
  channel.entries$.subscribe((entries) => seen.push(...entries));
  channel.newRun();
  const writer = openSync(await channel.prepareForTunnel(), constants.O_WRONLY);
  // frpc's colours wrap each line with its newline: the reset code begins the next line.
  const stamp = '2026-11-25 10:00:00.000';
  writeSync(
    writer,
    `\x1b[1;34m${stamp} [I] [a.go:1] title \x1b]0;pwned\x07 clip \x1b]52;c;cHduZWQ=\x1b\\ end\n\x1b[0m` +
      `\x1b[1;33m${stamp} [W] [a.go:2] dcs \x1bPq#0;2;0;0;0\x1b\\ apc \x1b_x\x1b\\ c1 \x9b2J\x9d0;t\x9c end\n\x1b[0m` +
      `${stamp} [E] [a.go:3] bell\x07 nul\x00 bs\x08 cr\r del\x7f nel\x85 esc-c\x1bc keypad\x1b= tab\tend\r\n`,
  );
  await waitFor(
    async () => seen.length,
    (n) => n === 3,
  );
  const expected = [
    ['INFO', 'title  clip  end'],
    ['WARN', 'dcs  apc  c1  end'],
    ['ERROR', 'bell nul bs cr del nel esc-c keypad tab\tend'],
  ];
  t.deepEqual(
    seen.map((e) => [e.level, e.content]),
    expected,
  );
  closeSync(writer);
  const tail = await channel.exitTail();
  t.deepEqual(
    tail.map((line) => line.slice(stamp.length + 1)),
    expected.map(([level, content], i) => `[${level![0]}] [a.go:${i + 1}] ${content}`),
    'the lines that explain an exit',
  );
  const file = await waitFor(
    () => readFile(channel.logPath, 'utf8'),
    (text) => text.split('\n').length === 4,
  );
  t.false(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(file), JSON.stringify(file));
  t.deepEqual(
    channel.recentEntries(10).map((e) => [e.level, e.content]),
    expected,
  );
  channel.close();
});

test('the last lines of a log file, read backwards in blocks: a character cut by a block edge is read whole', async (t) => {
  const dir = await tempDir(undefined, t);
  const path = `${dir}/tunnel.log`;
  // Lines of three-byte characters: with 5-byte blocks, nearly every block edge cuts one.
  const lines = Array.from({ length: 40 }, (_, i) => `${i} ${'€'.repeat(i % 7)}`);
  await writeFile(path, `${lines.join('\n')}\n`);
  for (const block of [5, 7, 16 * 1024]) {
    t.deepEqual(tailOf(path, 10, block), lines.slice(-10), `blocks of ${block}`);
    t.deepEqual(tailOf(path, 100, block), lines, `the whole file, blocks of ${block}`);
  }
  t.false(tailOf(path, 40, 5).some((line) => line.includes('\uFFFD')));
  t.deepEqual(tailOf(`${dir}/missing.log`, 5), []);
});

test('half a line read when the daemon closes is written masked, as every line it writes', async (t) => {
  const dir = await tempDir('tunnelward-logs-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const logs = new InstanceLogs(
    dir,
    () => ({ maxBytes: 1 << 20, files: 1 }),
    pino({ enabled: false }),
    undefined,
    (text) => text.replaceAll('hunter2-secret', '***'),
  );
  const channel = logs.channel(7);
  const pipe = await channel.prepareForTunnel();
  const fd = openSync(pipe, constants.O_WRONLY);
  writeSync(
    fd,
    '2026-11-25 10:00:00.000 [I] [a.go:1] whole line hunter2-secret\n2026-11-25 10:00:01.000 [I] [a.go:2] half hunter2-secret',
  );
  await waitFor(
    async () => channel.recentEntries(5).length,
    (n) => n >= 1,
  );
  await logs.close();
  closeSync(fd);
  const file = await readFile(join(dir, 'logs', 'tunnel_7.log'), 'utf8');
  t.regex(file, /whole line \*\*\*\n.*half \*\*\*$/s);
  t.false(file.includes('hunter2-secret'));
});

test("an exit's last lines wait for a reader the log file paused: a line written in two parts is read whole", async (t) => {
  const dir = await tempDir('tunnelward-logs-');
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const logs = new InstanceLogs(dir, () => ({ maxBytes: 1 << 20, files: 1 }), pino({ enabled: false }));
  const channel = logs.channel(1);
  channel.newRun();
  const writer = openSync(await channel.prepareForTunnel(), constants.O_WRONLY);
  const stamp = '2026-11-25 10:00:00.000';
  writeSync(writer, `${stamp} [W] [client/service.go:323] connect to server`);
  await pause(50);
  // As the log file's pressure does when the disk falls behind (LogFileWriter's `pressure`).
  const reader = (channel as unknown as { reader: { pause(): void; resume(): void } }).reader;
  reader.pause();
  writeSync(writer, ' error: dial tcp 127.0.0.1:7000: connect: connection refused\n');
  closeSync(writer);
  setTimeout(() => reader.resume(), 100);
  const tail = await channel.exitTail();
  t.deepEqual(tail, [
    `${stamp} [W] [client/service.go:323] connect to server error: dial tcp 127.0.0.1:7000: connect: connection refused`,
  ]);
  channel.close();
});
