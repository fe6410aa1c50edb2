// Known secrets never leave tunnelward in clear, whatever the real frpc prints: the value of an instance's environment
// variable that frpc writes into its log (`dial tcp <value>:<port>`) is masked in the reply to the failed start, the
// log file, the instance log stream, the system log, the audit trail and the event stream.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { disposeWithTunnels, startWithRoot } from '../../helpers/daemon.js';
import { freePort } from '../../helpers/frp.js';
import { createInstance } from '../../helpers/instances.js';
import { realFrpSettings } from '../../helpers/real-frp.js';
import { openStream, wsUrl } from '../../helpers/streams.js';

// An address on loopback where nothing listens: frpc's login fails at once and it says where it dialled.
const SECRET = '127.45.67.89';
const TOKEN = 'rs-token-value';

test('a secret value frpc prints is masked in the failed start, the log file and every stream, the audit and the events', async (t) => {
  const { daemon, root } = await startWithRoot({ settingsToml: realFrpSettings() });
  t.teardown(() => disposeWithTunnels(daemon, root));
  const port = await freePort();
  const { id } = await createInstance(
    daemon,
    root,
    'rs_dial',
    { loginFailExit: true, 'auth.token': TOKEN },
    { serverPort: String(port) },
  );
  const events = await openStream(wsUrl(daemon.url, `/system/events?token=${root}`));
  t.teardown(() => events.ws.close());
  const modify = (type: string, modifiedData: unknown) =>
    daemon.post('/tunnelAct/instanceMgr/modify', { instanceID: id, type, modifiedData }, { token: root });
  t.true((await modify('environment', { SERVER_SECRET: SECRET })).body.success);
  // The value got into the file some other way (it is a valid address): it is still a known secret.
  t.true((await modify('configFile', { serverAddr: SECRET })).body.success);

  const failed = await daemon.post('/tunnelAct/instanceMgr/start', { instanceID: id }, { token: root });
  t.is(failed.status, 502);
  t.regex(failed.body.message, /last log lines:.*dial tcp \*\*\*:\d+: connect: connection refused/s);
  t.false(failed.body.message.includes(SECRET), failed.body.message);

  const logFile = await readFile(join(daemon.dataDir, 'logs', `tunnel_${id}.log`), 'utf8');
  t.regex(logFile, /dial tcp \*\*\*:\d+/);
  t.false(logFile.includes(SECRET), 'the log file');

  const instanceLog = await openStream(wsUrl(daemon.url, `/tunnelAct/instanceMgr/logs?instanceID=${id}&token=${root}`));
  t.teardown(() => instanceLog.ws.close());
  await instanceLog.waitFor((m) => m.some((e) => /dial tcp/.test(e.content)));
  t.false(JSON.stringify(instanceLog.messages).includes(SECRET), 'the instance log stream');

  const systemLog = await openStream(wsUrl(daemon.url, `/system/getLogs?token=${root}`));
  t.teardown(() => systemLog.ws.close());
  await systemLog.waitFor((m) => m.length > 0);
  t.false(JSON.stringify(systemLog.messages).includes(SECRET), 'the system log stream');
  t.false(
    daemon.output.some((line) => line.includes(SECRET)),
    'the system log',
  );

  const audit = await daemon.get('/system/audit?action=instance.start', { token: root });
  const entry = audit.body.data.entries[0];
  t.like(entry, { action: 'instance.start', outcome: 'failed' });
  t.regex(entry.message, /dial tcp \*\*\*/);
  t.false(JSON.stringify(audit.body).includes(SECRET), 'the audit trail');
  t.false(JSON.stringify(events.messages).includes(SECRET), 'the events');

  // The one reply that carries secrets on purpose: a superuser's export, unmasked; the file's token is known by now.
  const exported = await daemon.get(`/tunnelAct/instanceMgr/export?instanceID=${id}`, { token: root });
  t.like(exported.body.data, { masked: false });
  t.true(exported.body.data.content.includes(`token = "${TOKEN}"`), exported.body.data.content);
});
