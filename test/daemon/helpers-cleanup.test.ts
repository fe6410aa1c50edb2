// A test file's process that ends with a daemon still running (a hook that failed before its teardown was
// registered) takes the daemon with it: no test leaves a daemon behind.
import test from 'ava';
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { pidExists } from '../../src/system/proc.js';
import { waitFor } from '../helpers/instances.js';

test("a daemon still running when a test file's process exits is killed with it", async (t) => {
  const helper = pathToFileURL(new URL('../helpers/daemon.js', import.meta.url).pathname).href;
  const script =
    `const { startDaemon } = await import(${JSON.stringify(helper)});` +
    `const d = await startDaemon(); process.stdout.write(d.pid + ' ' + d.dataDir + '\\n'); process.exit(0);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 0);
  const [pid, dataDir] = out.trim().split(' ');
  t.teardown(() => rm(dataDir!, { recursive: true, force: true }));
  t.true(Number(pid) > 0);
  await waitFor(
    async () => pidExists(Number(pid)),
    (alive) => !alive,
  );
  t.false(pidExists(Number(pid)));
});
