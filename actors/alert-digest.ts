import { digestsOf, isConnectionAlert } from '../src/events/digest.js';
import type { NotificationEvent } from '../src/events/vocabulary.js';
import type { Settings } from '../src/settings/table.js';

/**
 * What goes to the webhook: every webhook event at once, except, while `Webhook.DigestSecs` is above 0, the
 * connection alerts, which are gathered from the first for that long and then sent as one `alerts.digest` per server
 * and direction (src/events/digest.ts). One server outage over twenty tunnels is then one webhook, not sixty.
 */
export class AlertDigest {
  private gathered: NotificationEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: () => Readonly<Settings>,
    /** The server (`host:port`) an instance's file names. */
    private readonly serverOf: (instanceID: number) => Promise<string | undefined>,
    private readonly send: (event: NotificationEvent) => void,
  ) {}

  offer(event: NotificationEvent): void {
    const windowSecs = this.settings()['Webhook.DigestSecs'];
    if (windowSecs === 0 || !isConnectionAlert(event)) return this.send(event);
    this.gathered.push(event);
    if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), windowSecs * 1000);
      this.timer.unref();
    }
  }

  /** Sends what is gathered now (also when the daemon stops). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const alerts = this.gathered;
    this.gathered = [];
    if (alerts.length === 0) return this.flushing;
    // In order: a digest whose servers are being looked up goes before the next one.
    this.flushing = this.flushing.then(async () => {
      const ids = [...new Set(alerts.flatMap((a) => (a.instanceID === null ? [] : [a.instanceID])))];
      const servers = new Map(await Promise.all(ids.map(async (id) => [id, await this.serverOf(id)] as const)));
      // A digest carries the number and time of the last alert it tells of.
      const { seq, at } = alerts[alerts.length - 1]!;
      for (const draft of digestsOf(alerts, (id) => servers.get(id))) this.send({ ...draft, seq, at });
    });
    return this.flushing;
  }
}
