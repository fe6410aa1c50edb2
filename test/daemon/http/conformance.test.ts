// The property-based conformance run: schemathesis (test/setup/install-schemathesis.sh) reads the live daemon's
// /openapi.json and sends every operation requests it generates from the document, valid and invalid, as each role
// in turn. Every answer must be one the document declares (status, headers, body schema), no request may get a 5xx,
// a request the document calls valid must not be refused as malformed, and one it calls invalid must not be
// accepted. test/conformance/conformance_hooks.py stamps a fresh X-Timestamp and the role's token on each request.
import test from 'ava';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { STREAM_PATHS } from '../../../src/http/log-streams.js';
import { PACKAGE_ROOT } from '../../../src/paths.js';
import { SETTING_KEYS } from '../../../src/settings/table.js';
import { disposeWithTunnels, startDaemon, tempDir } from '../../helpers/daemon.js';
import { createInstance, instanceSettings, tcpProxy } from '../../helpers/instances.js';

const ST = join(PACKAGE_ROOT, '.cache', 'schemathesis', 'bin', 'st');
/** Test cases per operation and phase: enough to reach every field's rules, few enough for the suite's budget. */
const EXAMPLES = 10;
/**
 * The superuser, who may call every operation, gets every phase, the coverage phase's field-by-field variations of
 * each request included: how a request is checked does not depend on who sends it. A visitor and an admin get the
 * schema's examples and the fuzzing phase (EXAMPLES generated requests per operation, valid and invalid), which
 * reach every operation and what each role is refused or shown. The coverage phase costs about 34 s of CPU per
 * role, a third of it on the three password fields, whose four rules its generator meets by filtering.
 */
const PHASES: Record<string, string> = {
  visitor: 'examples,fuzzing',
  admin: 'examples,fuzzing',
  superuser: 'examples,coverage,fuzzing',
};
/** A fixed seed: a run that fails fails again the same way (`st run ... --seed` reproduces it). */
const SEED = 20261126;
/** How long one role's run may take: inside the whole suite on 2 cores it has taken up to 5 minutes. */
const RUN_LIMIT_MS = 420_000;

/** What one run reports (schemathesis' JSON report, the parts read here). */
interface Report {
  operations: { selected: number; tested: number; errored: number };
  test_cases: { generated: number; with_failures: number };
  failures: Array<{ code: string; title: string; operations: string[] }>;
  errors: unknown[];
}

/** Runs `st` in `cwd` (where it keeps its cache of examples that failed: the test's temporary dir). */
function run(args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      ST,
      args,
      { cwd, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024, timeout: RUN_LIMIT_MS },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number(err.code ?? 1) : 0, output: `${stdout}${stderr}` });
      },
    );
  });
}

test('schemathesis, as a visitor, an admin and a superuser: every answer as documented, no 5xx', async (t) => {
  t.timeout(RUN_LIMIT_MS + 60_000);
  const daemon = await startDaemon({ settingsToml: instanceSettings({ 'RateLimit.Register': 100000 }) });
  const reports = await tempDir('conformance-', t);
  // The run starts tunnels too (loginFailExit false: they run on), and tunnels outlive a daemon by design.
  let root = '';
  t.teardown(() => disposeWithTunnels(daemon, root));
  root = await daemon.login();
  // Something to find: an instance with a proxy, and a user of each role.
  const { id } = await createInstance(daemon, root, 'conformance');
  await daemon.post(
    '/tunnelAct/proxyMgr/create',
    { instanceID: id, proxyInfo: tcpProxy('ssh', 6022) },
    { token: root },
  );
  const roles: Array<[string, string]> = [
    ['visitor', (await daemon.userWithToken(root, 'viewer', 'visitor')).token],
    ['admin', (await daemon.userWithToken(root, 'operator', 'admin')).token],
    ['superuser', root],
  ];

  /** One role's run: what it found wrong, as lines. */
  const runAs = async (role: string, token: string): Promise<string[]> => {
    const failures: string[] = [];
    const who = await daemon.get('/whoami', { token });
    const reportPath = join(reports, `${role}.json`);
    const { code, output } = await run(
      [
        '--config-file',
        join(PACKAGE_ROOT, 'test', 'conformance', 'schemathesis.toml'),
        'run',
        `${daemon.url}/openapi.json`,
        '--phases',
        PHASES[role]!,
        '-n',
        String(EXAMPLES),
        '--seed',
        String(SEED),
        // A restart would end the daemon under the run; a logout would end the role's own session.
        '--exclude-path',
        '/system/restart',
        '--exclude-path',
        '/logout',
        // An apply with prune deletes every instance it does not name: the ones the run works on (test/daemon/cli/apply.test.ts).
        '--exclude-path',
        '/tunnelAct/instanceMgr/apply',
        // WebSocket streams: the run speaks plain HTTP (test/daemon/http/routing.test.ts answers a plain request there).
        ...STREAM_PATHS.flatMap((path) => ['--exclude-path', path]),
        '--no-color',
        '--report',
        'json',
        '--report-json-path',
        reportPath,
      ],
      {
        TUNNELWARD_TOKEN: token,
        TUNNELWARD_SESSION: String(who.body.data.sessionID),
        TUNNELWARD_USER_ID: String(who.body.data.userID),
        TUNNELWARD_SETTING_KEYS: SETTING_KEYS.join(','),
        TUNNELWARD_SCRATCH: reports,
        PYTHONPATH: join(PACKAGE_ROOT, 'test', 'conformance'),
        SCHEMATHESIS_HOOKS: 'conformance_hooks',
      },
      reports,
    );
    // A run cut short (its time limit) leaves no report, or an unfinished one: said as such, with its output.
    const text = await readFile(reportPath, 'utf8').catch(() => '');
    const report = (() => {
      try {
        return JSON.parse(text) as Report;
      } catch {
        return null;
      }
    })();
    if (!report) return [`${role}: no report (exit ${code}):\n${output.slice(-3000)}`];
    t.log(
      `${role}: ${report.operations.tested} of ${report.operations.selected} operations, ${report.test_cases.generated} test cases, ${report.test_cases.with_failures} failed`,
    );
    for (const failure of report.failures) {
      failures.push(`${role}: ${failure.code} ${failure.title}: ${failure.operations.join(', ')}`);
    }
    if (report.errors.length > 0) failures.push(`${role}: errors: ${JSON.stringify(report.errors).slice(0, 2000)}`);
    t.is(report.operations.tested, report.operations.selected, `${role}: every selected operation tested`);
    if (failures.length > 0 || code !== 0) t.log(output.slice(-20_000));
    return failures;
  };

  // A visitor and an admin at once; a superuser after them, since what it changes (users, settings) could cut their
  // runs short.
  const [visitor, admin, superuser] = roles;
  const failures = (await Promise.all([runAs(...visitor!), runAs(...admin!)])).flat();
  failures.push(...(await runAs(...superuser!)));
  t.deepEqual(failures, []);
  t.true(daemon.proc.exitCode === null, 'the daemon is still up');
});
