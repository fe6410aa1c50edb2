import { LogView } from '../log-view';
import { useTitle } from '../ui';

/** The daemon's own log (WS /system/getLogs): the last 100 entries it keeps, then each new one. */
export function SystemLog() {
  useTitle('System log');
  return (
    <section class="page" aria-labelledby="syslog-title">
      <div class="page-head">
        <h1 id="syslog-title">System log</h1>
        <span class="muted">the daemon's own log: the last 100 entries, then each new one</span>
      </div>
      <LogView path="/system/getLogs" label="System log" />
    </section>
  );
}
