/**
 * What tunnelward tells the world: the kinds of event (the event stream has them all, webhooks the ones that mean
 * something to someone outside), their fields, and how a change of an instance's state becomes them. One home for
 * the vocabulary that the lifecycle, the event hub, the webhook notifier and the streams speak.
 */

import type { InstanceState } from '../../machines/instance.machine.js';
import type { DigestItem } from './digest.js';

/** A change of an instance's state, as the lifecycle tells it. */
export interface InstanceStateChange {
  instanceID: number;
  name: string;
  from: InstanceState;
  to: InstanceState;
  exitCode: number | null;
  signal: string | null;
  /** Crashes in a row, and the delay before the next start, while in backoff. */
  attempt: number;
  delayMs: number | null;
  at: number;
  /** Why a run or a start ended: the exit with the tunnel's last lines, or the spawn's refusal. */
  reason?: string;
}

export type NotificationKind =
  | 'instance.started'
  | 'instance.stopped'
  | 'instance.crashed'
  | 'instance.restarting'
  | 'instance.failed'
  | 'instance.bootServiceError'
  | 'instance.logFailed'
  | 'instance.logRecovered'
  | 'service.started'
  | 'service.stopping'
  /** The catalogue: an instance was created, changed (its config file, proxies, record, environment) or deleted. */
  | 'instance.created'
  | 'instance.modified'
  | 'instance.deleted'
  /** Every change of an instance's state (the event stream only: webhooks get the kinds above). */
  | 'instance.state'
  /** What frpc says: a proxy working or not, the tunnel logged in to its server or not (debounced). */
  | 'proxy.up'
  | 'proxy.down'
  | 'instance.connected'
  | 'instance.disconnected'
  /** The health policy restarted a tunnel that ran but carried nothing (with why, in `message`). */
  | 'instance.healthRestart'
  /**
   * What the end-to-end probes say of a proxy frpc says runs (debounced like the alerts above): `proxy.unreachable`
   * with `to` = `unreachable from outside` or `local service down` and `err` the health's reason; `proxy.reachable`
   * when it is carried again. Kinds of their own, not proxy.down/up: frpc's word and the probe's are told apart.
   */
  | 'proxy.unreachable'
  | 'proxy.reachable'
  /** The live status as frpc reports it changed (first sights included, not debounced): for UIs to re-read. */
  | 'instance.status'
  /** An expiry came: the instance was stopped, or one of its proxies disabled. */
  | 'instance.expired'
  | 'proxy.expired'
  /**
   * Webhooks only, with `Webhook.DigestSecs`: the connection alerts of one window, one per server and direction, in
   * place of one webhook each (src/events/digest.ts).
   */
  | 'alerts.digest';

/** What webhooks are sent: what an instance's life means, not each step of it, and not the catalogue's edits. */
const WEBHOOK_KINDS: ReadonlySet<NotificationKind> = new Set<NotificationKind>([
  'instance.started',
  'instance.stopped',
  'instance.crashed',
  'instance.restarting',
  'instance.failed',
  'instance.bootServiceError',
  'instance.logFailed',
  'instance.logRecovered',
  'service.started',
  'service.stopping',
  'proxy.up',
  'proxy.down',
  'instance.connected',
  'instance.disconnected',
  'instance.healthRestart',
  'instance.expired',
  'proxy.expired',
  'proxy.unreachable',
  'proxy.reachable',
]);

export const isWebhookEvent = (event: { event: NotificationKind }): boolean => WEBHOOK_KINDS.has(event.event);

export interface NotificationEvent {
  event: NotificationKind;
  instanceID: number | null;
  name: string;
  from: string | null;
  to: string | null;
  exitCode: number | null;
  signal: string | null;
  /** For instance.restarting: crashes in a row, and the delay before the next start. */
  attempt?: number;
  delayMs?: number;
  /**
   * For instance.bootServiceError, instance.logFailed, instance.logRecovered and instance.modified: what happened; for
   * instance.crashed, instance.failed and an instance.state that ends a run: why it ended.
   */
  message?: string;
  /** For instance.status: logged in to its server (null: not known), and how many proxies in each status. */
  connected?: boolean | null;
  proxyStatus?: Record<string, number>;
  /** For proxy.up, proxy.down and proxy.expired: which proxy; for the first two, frpc's error; for proxy.unreachable: the probe's reason. */
  proxy?: string;
  err?: string;
  /** For alerts.digest: the tunnels and proxies it tells of. */
  items?: DigestItem[];
  at: string;
  seq: number;
}

export type Draft = Omit<NotificationEvent, 'seq' | 'at'>;

/** What an instance's change of state means to someone watching from outside; adoption at start-up is no news. */
export function eventsOf(change: InstanceStateChange): Draft[] {
  const base = {
    instanceID: change.instanceID,
    name: change.name,
    from: change.from,
    to: change.to,
    exitCode: change.exitCode,
    signal: change.signal,
  };
  // Why it ended goes with the news of the end (instance.crashed, instance.failed).
  const why = change.reason !== undefined ? { message: change.reason } : {};
  const crashed: Draft = { event: 'instance.crashed', ...base, ...why };
  switch (change.to) {
    case 'running':
      return change.from === 'starting' ? [{ event: 'instance.started', ...base }] : [];
    case 'backoff':
      return [
        crashed,
        { event: 'instance.restarting', ...base, attempt: change.attempt, delayMs: change.delayMs ?? 0 },
      ];
    case 'failed':
      return [crashed, { event: 'instance.failed', ...base, ...why }];
    case 'stopped':
      // Ended by itself with code 0 (frpc after its own `/api/stop`) is a stop, not a crash.
      return (change.from === 'running' || change.from === 'starting') &&
        !(change.exitCode === 0 && change.signal === null)
        ? [crashed]
        : [{ event: 'instance.stopped', ...base }];
    default:
      return [];
  }
}
