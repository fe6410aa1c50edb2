// The output keeper as the next daemon meets it: a real spawner process over real named pipes. It is found by the
// directory on its command line (never another data dir's, whatever a pid file says), and a SIGTERM at any moment
// of its life is a hand-over: it ends on its own, and every byte is in the log file or still in the pipe.
import test from 'ava';
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync, readSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keepersOf, SPAWNER_SCRIPT, stopKeeper } from '../../../src/spawner/output-keeper.js';
import { pidExists } from '../../../src/system/proc.js';
import { until } from '../../helpers/until.js';

const SPAWNER = fileURLToPath(new URL(`../../../src/spawner/${SPAWNER_SCRIPT}`, import.meta.url));
const POLICY = { type: 'keep', maxBytes: 1024 * 1024, files: 2 };

interface Place {
  dir: string;
  /** The tunnel's end of its pipe: open for reading and writing, as a tunnel's output is. */
  tunnel: number;
  lines: string[];
}

/** A directory with one tunnel's pipe holding `count` lines, written by an end that stays open (a tunnel that runs). */
async function place(t: { teardown(fn: () => Promise<void>): void }, count: number): Promise<Place> {
  const dir = await mkdtemp(join(tmpdir(), 'keeper-'));
  const pipe = join(dir, 'tunnel_7.pipe');
  execFileSync('mkfifo', ['-m', '0600', pipe]);
  const tunnel = openSync(pipe, constants.O_RDWR);
  const lines = Array.from({ length: count }, (_, i) => `line ${i + 1} ${'x'.repeat(40)}\n`);
  writeSync(tunnel, lines.join(''));
  t.teardown(async () => {
    closeSync(tunnel);
    await rm(dir, { recursive: true, force: true });
  });
  return { dir, tunnel, lines };
}

/**
 * A spawner as a daemon starts one for `dir`, told how the logs rotate, once it has started a tunnel there (`sleep`,
 * writing nothing): from then on it is ready.
 */
async function spawner(t: { teardown(fn: () => void): void }, dir: string): Promise<ChildProcess> {
  const child = fork(SPAWNER, [dir], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  t.teardown(() => void child.kill('SIGKILL'));
  child.send(POLICY);
  const output = join(dir, 'tunnel_7.pipe');
  child.send({ type: 'spawn', ref: 1, file: 'sleep', args: ['60'], cwd: dir, env: { PATH: process.env.PATH }, output });
  const answer = await new Promise<{ type: string; pid: number }>((resolve) => child.once('message', resolve));
  if (answer.type !== 'spawned') throw new Error(`the spawner did not start a tunnel: ${JSON.stringify(answer)}`);
  t.teardown(() => process.kill(-answer.pid, 'SIGKILL'));
  return child;
}

const ended = (child: ChildProcess) =>
  new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null)
      resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('exit', (code, signal) => resolve({ code, signal }));
  });

/** What a pipe still holds, read without waiting. */
function leftIn(pipe: string): string {
  const fd = openSync(pipe, constants.O_RDONLY | constants.O_NONBLOCK);
  const buffer = Buffer.alloc(1024 * 1024);
  let text = '';
  try {
    for (;;) {
      const n = readSync(fd, buffer);
      if (n === 0) break;
      text += buffer.toString('utf8', 0, n);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
  } finally {
    closeSync(fd);
  }
  return text;
}

const logOf = (dir: string) => readFile(join(dir, 'tunnel_7.log'), 'utf8').catch(() => '');

test('a SIGTERM the moment the daemon goes, before or after the spawner became the keeper: it ends by itself, and every line is in the log or still in the pipe', async (t) => {
  // Ten times: the channel's end and the signal reach the spawner in either order.
  for (let round = 1; round <= 10; round++) {
    const { dir, lines } = await place(t, 200);
    const child = await spawner(t, dir);
    child.disconnect();
    child.kill('SIGTERM');
    t.deepEqual(
      await ended(child),
      { code: 0, signal: null },
      `round ${round}: a hand-over, not a death by the signal`,
    );
    t.is((await logOf(dir)) + leftIn(join(dir, 'tunnel_7.pipe')), lines.join(''), `round ${round}: no line lost`);
  }
});

test('a keeper is found by the directory on its command line: a pid file naming another data dir’s keeper is not obeyed, and each hands over its own', async (t) => {
  const a = await place(t, 50);
  const b = await place(t, 50);
  const keeperA = await spawner(t, a.dir);
  keeperA.disconnect();
  // Keeping: what the pipe held is in the log.
  await until(
    () => logOf(a.dir),
    (text) => text === a.lines.join(''),
  );
  t.deepEqual(keepersOf(a.dir), [keeperA.pid!]);
  t.deepEqual(keepersOf(b.dir), []);

  // A pid file, as an earlier version wrote, left in b's logs and naming a's keeper (stale: b's keeper went long ago).
  await writeFile(join(b.dir, 'keeper.pid'), `${keeperA.pid}\n`);
  t.deepEqual(await stopKeeper(b.dir), [], "b's daemon stops no keeper");
  t.true(pidExists(keeperA.pid!), "a's keeper keeps a's output");
  writeSync(a.tunnel, 'after the other daemon started\n');
  await until(
    () => logOf(a.dir),
    (text) => text.endsWith('after the other daemon started\n'),
  );

  t.deepEqual(await stopKeeper(a.dir), [keeperA.pid!]);
  t.deepEqual(await ended(keeperA), { code: 0, signal: null });
});

test('a keeper of an earlier version (named only by keeper.pid) is stopped if it holds one of the directory’s pipes, and not otherwise', async (t) => {
  const { dir } = await place(t, 1);
  // An earlier keeper as such ran: a spawner script with no argument, holding the tunnels' pipes open.
  const earlier = join(dir, 'earlier');
  await mkdir(earlier);
  const script = join(earlier, SPAWNER_SCRIPT);
  await writeFile(
    script,
    `const fs = require('node:fs');
     const fd = process.env.PIPE ? fs.openSync(process.env.PIPE, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK) : -1;
     process.on('SIGTERM', () => process.exit(0));
     setInterval(() => {}, 1000);
     process.stdout.write('ready\\n');`,
  );
  const run = (env: NodeJS.ProcessEnv) => {
    const child = spawn(process.execPath, ['--no-warnings', script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    t.teardown(() => void child.kill('SIGKILL'));
    return new Promise<ChildProcess>((resolve) => child.stdout!.once('data', () => resolve(child)));
  };

  const holding = await run({ PIPE: join(dir, 'tunnel_7.pipe') });
  await writeFile(join(dir, 'keeper.pid'), `${holding.pid}\n`);
  t.deepEqual(await stopKeeper(dir), [holding.pid!]);
  t.deepEqual(await ended(holding), { code: 0, signal: null });

  const unrelated = await run({});
  await writeFile(join(dir, 'keeper.pid'), `${unrelated.pid}\n`);
  t.deepEqual(await stopKeeper(dir), [], 'a spawner that holds none of its pipes is not its keeper');
  t.true(pidExists(unrelated.pid!));
  await t.throwsAsync(readFile(join(dir, 'keeper.pid')), { code: 'ENOENT' }, 'the pid file is gone');
});
