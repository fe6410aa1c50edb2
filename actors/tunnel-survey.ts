import type { Verdict } from '../src/frpc/verify.js';
import { addHealthCounts, countHealth, noHealthCounts, proxyHealthCounts } from '../src/instances/health-counts.js';
import type { HealthCounts } from '../src/instances/health-counts.js';
import type { TunnelFinding } from '../src/system/tunnel-checks.js';
import { WorkLimiter } from '../src/util/work-limiter.js';
import type { InstanceSupervisor } from './instance-supervisor.js';

/** `frpc verify` runs at once (each a few ms of a process): the self-check of a thousand files stays a few seconds. */
const VERIFY_CONCURRENCY = 4;

export interface TunnelSurvey {
  tunnels: TunnelFinding[];
  counts: { tunnels: HealthCounts; proxies: HealthCounts };
}

/**
 * What the self-check needs of every instance, asked of the supervisor: its health (the one answer), start at boot,
 * its file read for its proxies' health and given to `frpc verify` (TunnelPath's; the verdicts are kept, so a check
 * run again asks frpc only of files that changed).
 */
export async function surveyTunnels(supervisor: InstanceSupervisor): Promise<TunnelSurvey> {
  const limiter = new WorkLimiter(VERIFY_CONCURRENCY, Number.POSITIVE_INFINITY);
  const proxies = noHealthCounts();
  const tunnels = await Promise.all(
    supervisor.views().map(({ record }) =>
      limiter.run(async (): Promise<TunnelFinding> => {
        const health = supervisor.healthOf(record.id);
        const finding = { name: record.name, health, bootAtStart: record.bootAtStart };
        let verdict: Verdict;
        try {
          const config = await supervisor.readConfig(record.id);
          const all = config.proxies();
          const enabled = all.filter((p) => p.enabled !== false).map((p) => p.name);
          const live = supervisor.status.of(record.id)?.proxies;
          addHealthCounts(proxies, proxyHealthCounts(health, enabled, live, all.length - enabled.length));
          verdict = await supervisor.verifyFile(record.id, config);
        } catch (err) {
          return { ...finding, unread: (err as Error).message };
        }
        return { ...finding, verdict };
      }),
    ),
  );
  return { tunnels, counts: { tunnels: countHealth(tunnels.map((t) => t.health.state)), proxies } };
}
