import type { Command } from './command.js';
import { EXIT } from './errors.js';
import { paint, table, type Colour } from './render.js';

interface Check {
  name: string;
  ok: boolean;
  severity?: 'ok' | 'warn' | 'fail';
  message: string;
}

const SEVERITY_COLOURS: Record<string, Colour> = { ok: 'green', warn: 'yellow', fail: 'red' };

type Counts = Record<string, number>;

/** `tunnels: 3 up, 37 down, 2 failed; proxies: 10 up, 40 down`: the states that have any. */
export function healthLine(counts: { tunnels: Counts; proxies: Counts }): string {
  const some = (c: Counts) =>
    Object.entries(c)
      .filter(([, n]) => n > 0)
      .map(([state, n]) => `${n} ${state}`)
      .join(', ') || 'none';
  return `tunnels: ${some(counts.tunnels)}; proxies: ${some(counts.proxies)}`;
}

/**
 * `tunnelward doctor`: the daemon's self-check (the tunnels' included), a line per check; exit 1 when a check failed
 * (a tunnel down or failed is one: warnings pass).
 */
export const doctor: Command = {
  usage: 'doctor',
  summary: "the daemon's and the tunnels' self-check: ok, warn or fail for each check; exit 1 on a failure",
  async run(ctx) {
    const client = await ctx.client();
    const { data } = await client.get('/system/selfCheck');
    // A daemon older than severities: every problem is a failure.
    const severityOf = (c: Check) => c.severity ?? (c.ok ? 'ok' : 'fail');
    const failures = data.checks.filter((c) => severityOf(c) === 'fail').length;
    const warnings = data.checks.filter((c) => severityOf(c) === 'warn').length;
    if (ctx.json) ctx.io.out(`${JSON.stringify(data, null, 2)}\n`);
    else {
      const rows = data.checks.map((c) => [severityOf(c), c.name, c.message]);
      ctx.io.out(
        table(
          ['', 'check', 'found'],
          rows,
          (r, c) => (c === 0 ? SEVERITY_COLOURS[rows[r]![0]!] : undefined),
          ctx.io.colour,
        ),
      );
      // The tunnels and their proxies by health, beside the checks (a daemon older than that has none).
      if (data.counts) ctx.io.out(`${healthLine(data.counts)}\n`);
      const counts = [`${failures} failed`, `${warnings} warned`, `${data.checks.length - failures - warnings} ok`];
      const verdict = failures > 0 ? paint('fail', 'red', ctx.io.colour) : paint('ok', 'green', ctx.io.colour);
      ctx.io.out(`${verdict}: ${counts.join(', ')} (at ${ctx.url})\n`);
    }
    return failures > 0 ? EXIT.failed : EXIT.ok;
  },
};
