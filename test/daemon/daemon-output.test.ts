// What the daemon says on its standard output: JSON lines or lines for a person, and at start-up whether the
// tunnel client it would run can be run.
import { spawn } from 'node:child_process';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import { ADMIN, CLI, collectLines, dispose, spawnCli, programDir, startDaemon, tempDir } from '../helpers/daemon.js';
import { FIXTURE_FRPC, instanceSettings } from '../helpers/instances.js';
import { until } from '../helpers/until.js';

const PRETTY = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (DEBUG|INFO |WARNING|ERROR|FATAL) /;
const withoutColours = (line: string) => line.replace(/\x1b\[[0-9;]*m/g, '');

test('--log-format pretty writes lines for a person; through a pipe the default is JSON', async (t) => {
  const pretty = await startDaemon({ settingsToml: instanceSettings(), args: ['--log-format', 'pretty'] });
  t.teardown(() => dispose(pretty));
  const listening = await pretty.waitForOutput(/^.* INFO {2}listening \(url=(http:\S+) dataDir=.*\)$/);
  t.regex(listening[0], PRETTY);
  t.is(listening[1], pretty.url);
  await pretty.waitForOutput(/INFO {2}tunnel client found \(tunnelPath=\S+frpc\.mjs version=0\.71\.0\)$/);
  t.false(
    pretty.output.some((l) => l.startsWith('{')),
    pretty.output.join('\n'),
  );

  const json = await startDaemon({ settingsToml: instanceSettings() });
  t.teardown(() => dispose(json));
  // The log is written asynchronously: its line may come after the daemon said where it listens.
  const line = JSON.parse((await json.waitForOutput(/^\{.*"msg":"listening".*\}$/))[0]);
  t.like(line, { level: 30, msg: 'listening', url: json.url });
});

test('on a terminal the default is pretty; TUNNELWARD_LOG_FORMAT=json forces JSON; a bad format stops the start', async (t) => {
  /** The daemon on a terminal (script's pty) until it listens; its lines, colours removed. */
  const onTerminal = async (env: Record<string, string>) => {
    const dataDir = await tempDir(undefined, t);
    const command = [process.execPath, CLI, 'serve', '--data-dir', dataDir, '--port', '0'].join(' ');
    const proc = spawn('script', ['-qfec', command, '/dev/null'], {
      env: {
        ...process.env,
        TUNNELWARD_ADMIN_PASSWORD: ADMIN.passwd,
        TUNNELWARD_ARGON2_MEMORY_KIB: '8192',
        TERM: 'xterm',
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    t.teardown(async () => {
      proc.kill('SIGKILL');
      await exited;
    });
    const lines: string[] = [];
    collectLines(proc, lines);
    await until(() => lines.some((l) => l.includes('tunnelward listening on')) || proc.exitCode !== null, Boolean, {
      timeoutMs: 20_000,
      everyMs: 20,
      what: 'the daemon to listen',
    });
    if (proc.exitCode !== null) throw new Error(`did not listen:\n${lines.join('\n')}`);
    // The daemon itself, not script: a hang-up is a reload to it.
    process.kill(Number(await readFile(join(dataDir, 'tunnelward.pid'), 'utf8')), 'SIGTERM');
    await exited;
    return lines.map((l) => withoutColours(l.replace(/\r$/, '')));
  };
  const pretty = await onTerminal({});
  t.true(
    pretty.some((l) => PRETTY.test(l) && l.includes(' listening (url=')),
    pretty.join('\n'),
  );
  const json = await onTerminal({ TUNNELWARD_LOG_FORMAT: 'json' });
  t.true(
    json.some((l) => l.startsWith('{') && l.includes('"msg":"listening"')),
    json.join('\n'),
  );

  const bad = spawnCli(['serve', '--data-dir', await tempDir(undefined, t), '--port', '0', '--log-format', 'xml']);
  const out: string[] = [];
  collectLines(bad, out);
  const code = await new Promise((resolve) => bad.once('exit', resolve));
  t.is(code, 1);
  t.regex(out.join('\n'), /--log-format must be json or pretty, not "xml"/);
});

test('a tunnel client that is not frpc is warned about at start-up; a TunnelPath set later is checked first, then found', async (t) => {
  // Where the daemon would run a program from: only root can change it (a temp dir anyone may write to is refused).
  const dir = await programDir();
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const notFrpc = join(dir, 'not-frpc');
  await writeFile(notFrpc, '#!/bin/sh\necho "usage: something else"\n');
  await chmod(notFrpc, 0o755);
  const daemon = await startDaemon({ settingsToml: instanceSettings({}, notFrpc) });
  t.teardown(() => dispose(daemon));
  const wrong = JSON.parse(
    (await daemon.waitForOutput(/^\{.*cannot be run: no instance will start until it can.*$/))[0],
  );
  t.like(wrong, {
    level: 40,
    tunnelPath: notFrpc,
    problem: `${notFrpc} -v answered "usage: something else", not a version: is it frpc?`,
  });

  const root = await daemon.login();
  const missing = join(dir, 'missing-frpc');
  const refused = await daemon.post('/settings/set', { TunnelPath: missing }, { token: root });
  t.is(refused.status, 409, 'well-formed, but the file is not there: refused by its state');
  t.regex(refused.body.message, new RegExp(`${missing} is missing or not an executable file`));
  t.true((await daemon.post('/settings/set', { TunnelPath: FIXTURE_FRPC }, { token: root })).body.success);
  const found = JSON.parse((await daemon.waitForOutput(/^\{.*tunnel client found.*$/))[0]);
  t.like(found, { level: 30, tunnelPath: FIXTURE_FRPC, version: '0.71.0' });
});
