// A real Prometheus (Debian's, unpacked by test/setup/install-prometheus.sh) for one test: loopback, an ephemeral
// port, its own storage, killed and removed when the test ends.
import { spawn } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { parse, stringify } from 'yaml';
import { PACKAGE_ROOT } from '../../src/paths.js';
import { collectLines, tempDir } from './daemon.js';
import { killOnExit } from './exit-guard.js';
import { freePort } from './frp.js';
import { until } from './until.js';

const BIN = join(PACKAGE_ROOT, '.cache', 'prometheus', 'bin');
export const PROMETHEUS = join(BIN, 'prometheus');
export const PROMTOOL = join(BIN, 'promtool');
export const EXAMPLES = join(PACKAGE_ROOT, 'examples', 'prometheus');

export interface Prometheus {
  url: string;
  output: string[];
  /** An instant query's result vector. */
  query(expr: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>>;
  /** GET of a path of the HTTP API, its `data`. */
  api<T = any>(path: string): Promise<T>;
}

/**
 * Prometheus with the example config (examples/prometheus/prometheus.yml) pointed at `target` (`host:port`), the key
 * read from a file of mode 0600 in a directory of mode 0700, the example rules, and every interval `intervalSecs`.
 */
export async function startPrometheus(t: ExecutionContext, target: string, key: string, intervalSecs = 1) {
  const dir = await tempDir('prometheus-', t);
  await chmod(dir, 0o700);
  const keyFile = join(dir, 'tunnelward.key');
  await writeFile(keyFile, `${key}\n`, { mode: 0o600 });
  const config = parse(await readFile(join(EXAMPLES, 'prometheus.yml'), 'utf8'));
  config.global.scrape_interval = `${intervalSecs}s`;
  config.global.evaluation_interval = `${intervalSecs}s`;
  config.rule_files = config.rule_files.map((file: string) => join(EXAMPLES, file));
  const job = config.scrape_configs[0];
  job.authorization.credentials_file = keyFile;
  job.static_configs[0].targets = [target];
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, stringify(config));

  const port = await freePort();
  const proc = spawn(
    PROMETHEUS,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // Not the package's default /usr/share paths: nothing of the package is installed, only its binary.
      `--web.console.templates=${join(dir, 'consoles')}`,
      `--web.console.libraries=${join(dir, 'console_libraries')}`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  killOnExit(proc);
  const output: string[] = [];
  collectLines(proc, output);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  t.teardown(async () => {
    proc.kill('SIGKILL');
    await exited;
  });
  const url = `http://127.0.0.1:${port}`;
  await until(
    () =>
      fetch(`${url}/-/ready`)
        .then((res) => res.ok)
        .catch(() => false),
    (ready) => ready || proc.exitCode !== null,
    { timeoutMs: 30_000, what: 'Prometheus ready' },
  );
  if (proc.exitCode !== null) throw new Error(`prometheus exited (${proc.exitCode}):\n${output.join('\n')}`);

  const api = async <T = any>(path: string): Promise<T> => {
    const body = (await (await fetch(`${url}/api/v1/${path}`)).json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${path}: ${body.error}`);
    return body.data;
  };
  const prometheus: Prometheus = {
    url,
    output,
    api,
    query: async (expr) => (await api(`query?query=${encodeURIComponent(expr)}`)).result,
  };
  return { prometheus, keyFile, configFile };
}
