import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Logger } from '../src/log/logger.js';
import { DEFAULTS } from '../src/settings/defaults.js';
import type { Settings } from '../src/settings/table.js';
import type { NotificationEvent } from '../src/events/vocabulary.js';

/** Fills `{{field}}` placeholders in every string of the configured body; JSON.stringify escapes the values. */
export function renderBody(template: unknown, event: NotificationEvent): unknown {
  if (typeof template === 'string') {
    return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, field: string) => {
      const value = (event as unknown as Record<string, unknown>)[field];
      return value === undefined || value === null ? '' : String(value);
    });
  }
  if (Array.isArray(template)) return template.map((item) => renderBody(item, event));
  if (template !== null && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, renderBody(v, event)]));
  }
  return template;
}

export interface NotifierOptions {
  /** Events waiting at most; past that new events are dropped and counted. */
  capacity: number;
  /** First delay between attempts; it doubles with each retry. */
  retryDelayMs: number;
}

export const DEFAULT_NOTIFIER_OPTIONS: NotifierOptions = {
  capacity: DEFAULTS.webhookQueueCapacity,
  retryDelayMs: DEFAULTS.webhookRetryDelayMs,
};

/** Where a request went, without the path or query (webhook URLs often carry a secret in them). */
const originOf = (url: string): string => {
  try {
    return new URL(url).origin;
  } catch {
    return 'an invalid URL';
  }
};

/**
 * Delivers notification events to the configured webhook. `publish` never waits: events go into a bounded queue
 * that one worker delivers in order, with a timeout per attempt and retries with backoff on network errors and
 * 5xx (none on 4xx). Settings are read at each attempt, so a change applies at once.
 */
export class WebhookNotifier {
  readonly stats = { published: 0, delivered: 0, failed: 0, dropped: 0 };
  private readonly queue: NotificationEvent[] = [];
  private worker: Promise<void> | undefined;
  private readonly log: Logger;
  private stopping = false;

  constructor(
    private readonly settings: () => Readonly<Settings>,
    log: Logger,
    private readonly options: NotifierOptions = DEFAULT_NOTIFIER_OPTIONS,
  ) {
    this.log = log.child({ component: 'webhook' });
  }

  private enabled(s: Readonly<Settings>): boolean {
    return s['Notification.Enabled'] && s['Notification.Method'] === 'webhook' && s['Webhook.URL'] !== '';
  }

  /** Queues an event (numbered by the event hub) for delivery, when notifications are on. */
  publish(event: NotificationEvent): void {
    if (!this.enabled(this.settings())) return;
    this.stats.published++;
    if (this.queue.length >= this.options.capacity) {
      this.stats.dropped++;
      this.log.warn(
        { event: event.event, seq: event.seq, dropped: this.stats.dropped },
        'notification queue full, event dropped',
      );
      return;
    }
    this.queue.push(event);
    this.worker ??= this.work().finally(() => (this.worker = undefined));
  }

  private async work(): Promise<void> {
    for (let event = this.queue.shift(); event; event = this.queue.shift()) await this.deliver(event);
  }

  private async deliver(event: NotificationEvent): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const s = this.settings();
      if (!this.enabled(s)) return;
      // A request Node cannot even build (a header it refuses to send) will not get better: no retries.
      const outcome = await this.attempt(s, event).catch((err: Error) => `refused: cannot send: ${err.message}`);
      if (outcome === 'delivered') {
        this.stats.delivered++;
        return;
      }
      const retries = s['Webhook.Retries'];
      if (outcome.startsWith('refused') || attempt > retries || this.stopping) {
        this.stats.failed++;
        this.log.warn(
          { event: event.event, seq: event.seq, to: originOf(s['Webhook.URL']), attempts: attempt, reason: outcome },
          'notification not delivered',
        );
        return;
      }
      await new Promise((r) => setTimeout(r, this.options.retryDelayMs * 2 ** (attempt - 1)));
    }
  }

  /** One request: 'delivered' on 2xx, 'refused' on 4xx (retrying would not help), else the reason to retry. */
  private attempt(s: Readonly<Settings>, event: NotificationEvent): Promise<string> {
    const template = s['Webhook.Body'];
    const body = Object.keys(template).length === 0 ? event : renderBody(template, event);
    const method = s['Webhook.Method'];
    const payload = method === 'GET' ? undefined : Buffer.from(JSON.stringify(body));
    const url = new URL(s['Webhook.URL']);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve) => {
      // A connection of its own per attempt: a receiver that hangs holds nothing beyond the attempt's timeout.
      const req = send(url, {
        method,
        agent: false,
        headers: {
          'Content-Type': 'application/json',
          ...s['Webhook.Headers'],
          ...(payload ? { 'Content-Length': String(payload.length) } : {}),
        },
      });
      const timer = setTimeout(() => {
        req.destroy();
        resolve('timed out');
      }, s['Webhook.TimeoutSecs'] * 1000);
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => {
          clearTimeout(timer);
          const status = res.statusCode ?? 0;
          resolve(
            status >= 200 && status < 300
              ? 'delivered'
              : status >= 400 && status < 500
                ? `refused: HTTP ${status}`
                : `HTTP ${status}`,
          );
        });
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        resolve(`network error: ${err.message}`);
      });
      req.end(payload);
    });
  }

  /** Waits (at most `timeoutMs`) for queued events to go out; used when tunnelward stops. */
  async drain(timeoutMs: number): Promise<void> {
    this.stopping = true;
    if (!this.worker) return;
    await Promise.race([this.worker, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
  }
}
