import type { Subscription } from '../util/rx.js';
import type { EventHub } from '../../actors/event-hub.js';
import type { InstanceLogs } from '../../actors/instance-logs.js';
import type { InstanceSupervisor } from '../../actors/instance-supervisor.js';
import type { ProbeAlert, Prober } from '../../actors/probes.js';
import type { StatusAlert } from '../../actors/tunnel-status.js';
import { eventsOf } from '../events/vocabulary.js';

const NO_PROCESS = { from: null, to: null, exitCode: null, signal: null } as const;

/**
 * What becomes an event: every change of an instance's state (`instance.state`, and what it means: started,
 * crashed, restarting, failed, stopped), creates, modifications and deletes, what frpc reports (alerts, debounced,
 * and `instance.status` for UIs), boot-service errors, and log file faults. Returns the subscription that feeds them all to the hub.
 */
export function publishEvents(
  hub: EventHub,
  supervisor: InstanceSupervisor,
  logs: InstanceLogs,
  probes?: Prober,
): Subscription {
  const subscription = supervisor.stateChanges$.subscribe((change) => {
    const { instanceID, name, from, to, exitCode, signal, reason } = change;
    hub.publish({
      event: 'instance.state',
      instanceID,
      name,
      from,
      to,
      exitCode,
      signal,
      ...(reason !== undefined ? { message: reason } : {}),
    });
    for (const event of eventsOf(change)) hub.publish(event);
  });
  subscription.add(
    supervisor.catalogueChanges$.subscribe(({ event, instanceID, name, what }) =>
      hub.publish({ event, instanceID, name, ...NO_PROCESS, ...(what ? { message: what } : {}) }),
    ),
  );
  const alert = ({ event, instanceID, proxy, from, to, err }: StatusAlert | ProbeAlert) =>
    hub.publish({
      event,
      instanceID,
      name: supervisor.nameOf(instanceID),
      from,
      to,
      exitCode: null,
      signal: null,
      ...(proxy !== undefined ? { proxy } : {}),
      ...(err !== undefined ? { err } : {}),
    });
  subscription.add(supervisor.status.alerts$.subscribe(alert));
  const statusChanged = (instanceID: number) => {
    const name = supervisor.nameOf(instanceID);
    // Gone meanwhile: its deletion says enough.
    if (name === '') return;
    hub.publish({
      event: 'instance.status',
      instanceID,
      name,
      ...NO_PROCESS,
      ...supervisor.statusFields(instanceID),
    });
  };
  subscription.add(supervisor.status.changed$.subscribe(statusChanged));
  if (probes) {
    // A probe's verdict changes the health: UIs re-read it, and a verdict that held is news.
    subscription.add(probes.changed$.subscribe(statusChanged));
    subscription.add(probes.alerts$.subscribe(alert));
  }
  subscription.add(
    supervisor.healthPolicy.restarts$.subscribe(({ instanceID, reason }) =>
      hub.publish({
        event: 'instance.healthRestart',
        instanceID,
        name: supervisor.nameOf(instanceID),
        ...NO_PROCESS,
        message: reason,
      }),
    ),
  );
  subscription.add(
    supervisor.expiry.expired$.subscribe(({ event, instanceID, name, proxy, message }) =>
      hub.publish({ event, instanceID, name, ...NO_PROCESS, ...(proxy !== undefined ? { proxy } : {}), message }),
    ),
  );
  subscription.add(
    supervisor.boot.errors$.subscribe(({ instanceID, name, message }) =>
      hub.publish({ event: 'instance.bootServiceError', instanceID, name, ...NO_PROCESS, message }),
    ),
  );
  subscription.add(
    logs.faults$.subscribe(({ instanceID, fault, recovered, message }) =>
      hub.publish({
        event: recovered ? 'instance.logRecovered' : 'instance.logFailed',
        instanceID,
        name: supervisor.nameOf(instanceID),
        ...NO_PROCESS,
        message:
          message ??
          (recovered
            ? `log file writable again; ${fault.lostBytes} bytes of output were dropped`
            : `cannot write the log file: ${fault.reason}`),
      }),
    ),
  );
  return subscription;
}
