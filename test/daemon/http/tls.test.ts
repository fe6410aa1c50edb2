import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { WebSocket } from 'ws';
import { ADMIN, dispose, startDaemon, tempDir } from '../../helpers/daemon.js';
import { instanceSettings, waitFor } from '../../helpers/instances.js';

const run = promisify(execFile);

interface Pair {
  cert: string;
  key: string;
  fingerprint: string;
  pem: string;
}

/** A self-signed certificate for 127.0.0.1, made by openssl as an operator would. */
async function makeCertificate(dir: string, name: string): Promise<Pair> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await run('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=tunnelward test ${name}`,
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ]); // prettier-ignore
  const pem = await readFile(cert, 'utf8');
  return { cert, key, pem, fingerprint: new X509Certificate(pem).fingerprint256 };
}

/** One request on a fresh connection (no reuse): it sees the certificate served now. */
function httpsRequest(
  url: string,
  path: string,
  ca: string[],
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: any; fingerprint: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      { method: options.method ?? 'GET', ca, agent: false, headers: options.headers },
      (res) => {
        const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text), fingerprint }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Writes a file as a renewal would: a new file renamed over the old one. */
async function replace(path: string, from: string): Promise<void> {
  await writeFile(`${path}.new`, await readFile(from));
  await rename(`${path}.new`, path);
}

test('HTTPS and WSS with the configured certificate; a renewed one is served after SIGHUP or a settings change, a broken one never', async (t) => {
  const dir = await tempDir('tunnelward-tls-', t);
  const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map((n) => makeCertificate(dir, n)));
  const live = { cert: join(dir, 'live.crt'), key: join(dir, 'live.key') };
  await replace(live.cert, a!.cert);
  await replace(live.key, a!.key);
  const settingsToml = `${instanceSettings()}"TLS.CertFile" = ${JSON.stringify(live.cert)}\n"TLS.KeyFile" = ${JSON.stringify(live.key)}\n`;
  const daemon = await startDaemon({ settingsToml });
  t.teardown(() => dispose(daemon));
  t.regex(daemon.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  const ca = [a!.pem, b!.pem, c!.pem, d!.pem];

  const status = await httpsRequest(daemon.url, '/system/getStatus', ca);
  t.is(status.status, 200);
  t.is(status.fingerprint, a!.fingerprint);
  const login = await httpsRequest(daemon.url, '/login', ca, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Timestamp': String(Date.now()) },
    body: JSON.stringify({ username: ADMIN.username, passwd: ADMIN.passwd }),
  });
  const token = login.body.data.token as string;
  t.truthy(token);
  const authed = (path: string) =>
    httpsRequest(daemon.url, path, ca, { headers: { 'X-Token': token, 'X-Timestamp': String(Date.now()) } });

  // WSS: the system log stream over TLS.
  const ws = new WebSocket(`${daemon.url.replace('https', 'wss')}/system/getLogs?token=${token}`, { ca });
  const first = await new Promise<any>((resolve, reject) => {
    ws.once('message', (data) => resolve(JSON.parse(String(data))));
    ws.once('error', reject);
  });
  t.is(typeof first.content, 'string');
  ws.close();

  // Renewal in place, then SIGHUP (what `systemctl reload tunnelward` sends).
  await replace(live.cert, b!.cert);
  await replace(live.key, b!.key);
  daemon.proc.kill('SIGHUP');
  await daemon.waitForOutput(/TLS certificate reloaded/);
  t.is((await httpsRequest(daemon.url, '/system/getStatus', ca)).fingerprint, b!.fingerprint);

  // New paths through the settings: served at once, no restart.
  const set = await httpsRequest(daemon.url, '/settings/set', ca, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Token': token, 'X-Timestamp': String(Date.now()) },
    body: JSON.stringify({ 'TLS.CertFile': c!.cert, 'TLS.KeyFile': c!.key }),
  });
  t.true(set.body.success, set.body.message);
  const onC = await waitFor(
    () => httpsRequest(daemon.url, '/system/getStatus', ca),
    (r) => r.fingerprint === c!.fingerprint,
  );
  t.is(onC.status, 200);

  // A certificate with the wrong key: refused, the working one stays, the self-check says why.
  await replace(c!.cert, d!.cert);
  daemon.proc.kill('SIGHUP');
  await daemon.waitForOutput(/TLS certificate not reloaded/);
  t.is((await httpsRequest(daemon.url, '/system/getStatus', ca)).fingerprint, c!.fingerprint);
  const check = await authed('/system/selfCheck');
  const tls = check.body.data.checks.find((x: any) => x.name === 'tls');
  t.false(tls.ok);
  t.regex(tls.message, /cannot be used: .*; the previous certificate is still served/);
  t.false(
    daemon.output.some((line) => line.includes('PRIVATE KEY')),
    'no key material in the log',
  );
  t.is(daemon.proc.exitCode, null, 'the daemon kept serving');
});

test('a certificate that cannot be read stops the start with the reason', async (t) => {
  const dir = await tempDir('tunnelward-tls-', t);
  const daemon = startDaemon({
    args: ['--tls-cert', join(dir, 'missing.crt'), '--tls-key', join(dir, 'missing.key')],
  });
  const err = await t.throwsAsync(daemon);
  t.regex(err!.message, /cannot read the TLS certificate .*missing\.crt: ENOENT/);
});
