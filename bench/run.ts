// `npm run bench [-- --quick] [-- --only name,name]`: measures a real daemon from outside and writes results.json.
// Scenarios marked explicit (peers) run only when named.
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PACKAGE_ROOT } from '../src/paths.js';
import { scenarios, type Scenario } from './scenarios.js';

export interface Row {
  scenario: string;
  metric: string;
  value: number | string;
  unit: string;
  goal?: string;
}

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const onlyIndex = args.indexOf('--only');
const only = onlyIndex >= 0 ? new Set(args[onlyIndex + 1]!.split(',')) : undefined;

function format(rows: Row[]): string {
  const widths = [10, 44, 12, 8, 16];
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join(' ')
      .trimEnd();
  return [
    line(['scenario', 'metric', 'value', 'unit', 'goal']),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) =>
      line([
        r.scenario,
        r.metric,
        typeof r.value === 'number' ? String(Math.round(r.value * 100) / 100) : r.value,
        r.unit,
        r.goal ?? '',
      ]),
    ),
  ].join('\n');
}

async function main() {
  const rows: Row[] = [];
  const started = Date.now();
  for (const scenario of scenarios as Scenario[]) {
    if (only ? !only.has(scenario.name) : scenario.explicit) continue;
    process.stderr.write(`bench: ${scenario.name}...\n`);
    const t0 = Date.now();
    try {
      const got = await scenario.run({ quick });
      rows.push(...got.map((r) => ({ scenario: scenario.name, ...r })));
    } catch (err) {
      // One scenario failing must not lose the figures of the others.
      process.stderr.write(`bench: ${scenario.name} failed: ${(err as Error).stack ?? err}\n`);
      rows.push({ scenario: scenario.name, metric: `FAILED: ${(err as Error).message}`, value: '', unit: '' });
    }
    process.stderr.write(`bench: ${scenario.name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  }
  const table = format(rows);
  process.stdout.write(`${table}\n`);
  const file = join(PACKAGE_ROOT, 'bench', quick ? 'results.quick.json' : 'results.json');
  // A run of some scenarios replaces their rows and keeps the others' last figures, in the scenarios' order.
  if (only) {
    const kept = await readFile(file, 'utf8').then(
      (text) => (JSON.parse(text) as { rows: Row[] }).rows.filter((r) => !only.has(r.scenario)),
      () => [] as Row[],
    );
    const order = scenarios.map((s) => s.name);
    rows.splice(
      0,
      rows.length,
      ...[...kept, ...rows].sort((a, b) => order.indexOf(a.scenario) - order.indexOf(b.scenario)),
    );
  }
  const result = {
    at: new Date().toISOString(),
    quick,
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    seconds: (Date.now() - started) / 1000,
    rows,
  };
  await writeFile(file, JSON.stringify(result, null, 2) + '\n');
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`bench failed: ${err.stack ?? err}\n`);
    process.exit(1);
  },
);

export { spawn };
