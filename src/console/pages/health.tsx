import { useEffect, useState } from 'preact/hooks';
import type { SelfCheck, Severity } from '../api';
import { count, dateTime } from '../format';
import { tally, type HealthMonitor, type HealthState } from '../health';
import { ErrorText, useSession, useTitle } from '../ui';

/** Each result as a word and a sign, never a colour alone. */
const SIGNS: Record<Severity, string> = { ok: '✓', warn: '!', fail: '✕' };
const ORDER: Severity[] = ['fail', 'warn', 'ok'];

export function useHealth(monitor: HealthMonitor): HealthState {
  const [state, setState] = useState(monitor.state);
  useEffect(() => {
    setState(monitor.state);
    return monitor.subscribe(setState);
  }, [monitor]);
  return state;
}

export function SeverityBadge({ severity }: { severity: Severity }) {
  return (
    <span class={`badge severity severity-${severity}`}>
      <span aria-hidden="true">{SIGNS[severity]}</span> {severity}
    </span>
  );
}

/** "1 failed, 2 warned" of the checks that found a problem; empty when none did. */
function problems(counts: Record<Severity, number>): string {
  return [counts.fail ? `${counts.fail} failed` : '', counts.warn ? `${counts.warn} warned` : '']
    .filter(Boolean)
    .join(', ');
}

/** In the header, for admins: a link to the Health page while a check fails or warns; nothing otherwise. */
export function HealthIndicator({ monitor }: { monitor: HealthMonitor }) {
  const { report } = useHealth(monitor);
  const counts = tally(report);
  const worst: Severity = counts.fail ? 'fail' : counts.warn ? 'warn' : 'ok';
  return (
    // Always there, so that a change of what it says is announced.
    <span role="status" class="health-slot">
      {worst !== 'ok' && (
        <a href="#/health" class={`health-indicator severity-${worst}`} title="The daemon's self-check: open Health">
          <span aria-hidden="true">{SIGNS[worst]}</span> Self-check: {problems(counts)}
        </a>
      )}
    </span>
  );
}

/**
 * The tunnels and their proxies by health as the self-check counted them (the daemon's one answer for each): a
 * card each for what needs a look, a link to the instances.
 */
function HealthCards({ counts }: { counts: SelfCheck['counts'] }) {
  const card = (key: string, label: string, value: number, tone: string, detail?: string) => (
    <a key={key} href="#/instances" class={`chip chip-${tone} ${value > 0 ? '' : 'chip-zero'}`} data-count={key}>
      <span class="chip-value">{value}</span>
      <span class="chip-label">{label}</span>
      {detail && <span class="chip-detail">{detail}</span>}
    </a>
  );
  const { tunnels, proxies } = counts;
  const total = (c: Record<string, number>) => Object.values(c).reduce((a, b) => a + b, 0);
  return (
    <div class="summary health-cards" role="group" aria-label="Tunnels and proxies by health">
      {card('tunnelsUp', 'tunnels up', tunnels.up, 'ok', `of ${total(tunnels)}`)}
      {card('tunnelsDown', 'tunnels down', tunnels.down, 'bad')}
      {card('tunnelsDegraded', 'degraded', tunnels.degraded, 'warn')}
      {card('tunnelsFailed', 'failed', tunnels.failed, 'bad')}
      {card('proxiesDown', 'proxies down', proxies.down, 'bad', `of ${total(proxies)}`)}
    </div>
  );
}

/** The daemon's self-check (admin): each check's result and what it found, run again on demand. */
export function HealthPage({ monitor }: { monitor: HealthMonitor }) {
  useTitle('Health');
  const { notify } = useSession();
  const { report, checkedAt, running, error } = useHealth(monitor);
  const counts = tally(report);
  const checks = [...(report?.checks ?? [])].sort((a, b) => ORDER.indexOf(a.severity) - ORDER.indexOf(b.severity));

  const rerun = async () => {
    await monitor.run();
    const after = monitor.state;
    if (after.error) return;
    const found = problems(tally(after.report));
    notify(found ? `Self-check run again: ${found}.` : 'Self-check run again: every check passed.');
  };

  return (
    <section class="page" aria-labelledby="health-title">
      <div class="page-head">
        <h1 id="health-title">Health</h1>
        <span class="muted">the daemon's and the tunnels' self-check</span>
        <span class="spacer" />
        <button type="button" onClick={rerun} disabled={running}>
          {running ? 'Checking…' : 'Run the self-check again'}
        </button>
      </div>
      <ErrorText>{error && `Could not run the self-check: ${error}`}</ErrorText>
      {!report && !error && <p class="muted">Checking…</p>}
      {report && (
        <>
          <p class={`health-summary severity-${counts.fail ? 'fail' : counts.warn ? 'warn' : 'ok'}`}>
            {problems(counts) ? `${problems(counts)}, ${counts.ok} ok` : `All ${count(checks.length, 'check')} passed`}
            <span class="muted"> (checked {dateTime(new Date(checkedAt ?? Date.now()).toISOString())})</span>
          </p>
          {report.counts && <HealthCards counts={report.counts} />}
          <div class="table-wrap">
            <table class="grid checks" aria-busy={running}>
              <thead>
                <tr>
                  <th scope="col">Check</th>
                  <th scope="col">Result</th>
                  <th scope="col">What was found</th>
                </tr>
              </thead>
              <tbody>
                {checks.map((c) => (
                  <tr key={c.name} data-check={c.name}>
                    <th scope="row" data-label="Check">
                      <span class="mono">{c.name}</span>
                    </th>
                    <td data-label="Result">
                      <SeverityBadge severity={c.severity} />
                    </td>
                    <td data-label="Found" class="message">
                      {c.message}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p class="hint">
            A warning is a problem the daemon works on with (such as a door left open beyond loopback, or a tunnel with
            some proxies down); a failure needs fixing (a tunnel down or failed is one). <code>tunnelward doctor</code>{' '}
            runs the same checks.
          </p>
        </>
      )}
    </section>
  );
}
