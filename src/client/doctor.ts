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

/** `tunnelward doctor`: the daemon's self-check, a line per check; exit 1 when a check failed (warnings pass). */
export const doctor: Command = {
  usage: 'doctor',
  summary: "the daemon's self-check: ok, warn or fail for each check; exit 1 on a failure",
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
      const counts = [`${failures} failed`, `${warnings} warned`, `${data.checks.length - failures - warnings} ok`];
      const verdict = failures > 0 ? paint('fail', 'red', ctx.io.colour) : paint('ok', 'green', ctx.io.colour);
      ctx.io.out(`${verdict}: ${counts.join(', ')} (at ${ctx.url})\n`);
    }
    return failures > 0 ? EXIT.failed : EXIT.ok;
  },
};
