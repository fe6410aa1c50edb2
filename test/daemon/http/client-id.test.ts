// frpc's clientID in the files tunnelward makes: `<host>-<instance name>` unless set, so a server's client list says
// which host and instance each connection is.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { parse } from 'smol-toml';
import { disposeWithTunnels, startWithRoot, type Daemon } from '../../helpers/daemon.js';
import { createInstance, instanceSettings } from '../../helpers/instances.js';
import { defaultClientID } from '../../../src/config/tunnel-config.js';

let daemon: Daemon;
let root: string;
test.before(async () => {
  ({ daemon, root } = await startWithRoot({ settingsToml: instanceSettings() }));
});
test.after.always(() => disposeWithTunnels(daemon, root));

const clientIDIn = async (configPath: string) =>
  (parse(await readFile(configPath, 'utf8')) as { clientID?: string }).clientID;

async function imported(name: string, content: string) {
  const res = await daemon.post('/tunnelAct/instanceMgr/import', { name, content }, { token: root });
  if (!res.body.success) throw new Error(res.body.message);
  return { ...(res.body.data as { configPath: string }), message: res.body.message };
}

test('the host name made safe, then the instance name', (t) => {
  t.is(defaultClientID('edge-01.example.net', 'web'), 'edge-01.example.net-web');
  t.is(defaultClientID('my host/ä', 'web'), 'my-host---web');
  t.is(defaultClientID('', 'web'), 'host-web');
});

test('create: clientID is <host>-<name> unless given, and a given one is kept', async (t) => {
  const made = await createInstance(daemon, root, 'cid_made');
  t.is(await clientIDIn(made.configPath), `${defaultClientID(hostname(), 'cid_made')}`);
  const own = await createInstance(daemon, root, 'cid_own', { clientID: 'my-own-id' });
  t.is(await clientIDIn(own.configPath), 'my-own-id');
});

test("import: the file's own clientID is kept; one without gets <host>-<name>, said in the message", async (t) => {
  const base = 'serverAddr = "127.0.0.1"\nserverPort = 7000\n';
  const kept = await imported('cid_kept', `clientID = "theirs"\n${base}`);
  t.is(await clientIDIn(kept.configPath), 'theirs');
  t.notRegex(kept.message, /clientID/);
  const added = await imported('cid_added', base);
  t.is(await clientIDIn(added.configPath), defaultClientID(hostname(), 'cid_added'));
  t.regex(added.message, /clientID = "[^"]+-cid_added" was added/);
});
