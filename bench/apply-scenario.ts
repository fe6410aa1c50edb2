import { REAL_FRPC } from '../test/helpers/frp.js';
import { BenchDaemon } from './lib/daemon.js';
import { LIFTED } from './lib/tunnels.js';
import type { Scenario } from './scenarios.js';
import type { Row } from './run.js';

/** A desired state of `count` instances (stopped: the apply is measured, not the starts), two proxies each. */
function desiredState(count: number, localPort: number) {
  return {
    instances: Array.from({ length: count }, (_, i) => ({
      name: `apply-${i}`,
      labels: { fleet: String(i % 10) },
      frpc: {
        serverAddr: '127.0.0.1',
        serverPort: 7000,
        auth: { method: 'token', token: `token-${i}` },
        proxies: [
          { name: `ssh-${i}`, type: 'tcp', localIP: '127.0.0.1', localPort, remotePort: 20000 + i },
          {
            name: `web-${i}`,
            type: 'http',
            localIP: '127.0.0.1',
            localPort: 8080,
            customDomains: [`h${i}.example.net`],
          },
        ],
      },
    })),
  };
}

/**
 * `tunnelward apply` at scale: a desired state of 1000 instances applied to an empty host (each an import: checks,
 * the real frpc's verify, file, first revision), the same again (nothing to change: no verify, no write), and one
 * proxy of every instance changed (each through the change pipeline: verify, revision, file). The real frpc, built by
 * test/setup/build-frp.sh, since a verify is a process of its own and the time of its start is frpc's.
 */
export const apply: Scenario = {
  name: 'apply',
  async run({ quick }) {
    const count = quick ? 100 : 1000;
    const rows: Omit<Row, 'scenario'>[] = [];
    const daemon = await BenchDaemon.start({ settingsToml: `TunnelPath = ${JSON.stringify(REAL_FRPC)}\n${LIFTED}` });
    try {
      await daemon.login();
      const timed = async (what: string, body: unknown, expect: string) => {
        const t0 = performance.now();
        const res = await daemon.call('POST', '/tunnelAct/instanceMgr/apply', body);
        const ms = performance.now() - t0;
        if (!res.success) throw new Error(res.message);
        const counts = res.data.counts as Record<string, number>;
        if (counts[expect] !== count) throw new Error(`${what}: ${res.message}`);
        rows.push({ metric: what, value: ms, unit: 'ms' });
      };
      await timed(`apply ${count} instances on an empty host`, desiredState(count, 22), 'created');
      await timed(`apply the same ${count} again (all unchanged)`, desiredState(count, 22), 'unchanged');
      await timed(`apply a proxy change to all ${count}`, desiredState(count, 2222), 'changed');
      rows.push({ metric: `daemon RSS after, ${count} instances`, value: await daemon.rssMiB(), unit: 'MiB' });
    } finally {
      await daemon.stop();
      await daemon.remove();
    }
    return rows;
  },
};
