import { closeSync, constants, openSync, write, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import test from 'ava';
import pino from 'pino';
import { InstanceLogs } from '../../actors/instance-logs.js';
import type { InstanceLogEntry } from '../../src/log/log-entries.js';
import { tempDir } from '../helpers/daemon.js';

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
