import { labelKeyProblem, labelValueProblem } from '../instances/labels.js';
import { print, type Command } from './command.js';
import { change } from './edit-commands.js';
import { usageError } from './errors.js';
import { ID_FLAG, listInstances, oneInstance } from './instance-refs.js';

/** `KEY=VALUE` sets a label, `KEY-` removes it (as kubectl label has them); each checked as the server checks them. */
export function labelChanges(words: readonly string[]): Record<string, string | null> {
  const changes: Record<string, string | null> = {};
  for (const word of words) {
    const eq = word.indexOf('=');
    const key = eq > 0 ? word.slice(0, eq) : word.endsWith('-') ? word.slice(0, -1) : undefined;
    if (key === undefined) throw usageError(`a label change is KEY=VALUE or KEY- (to remove it), not ${word}`);
    const value = eq > 0 ? word.slice(eq + 1) : null;
    const problem = labelKeyProblem(key) ?? (value === null ? undefined : labelValueProblem(key, value));
    if (problem) throw usageError(problem);
    changes[key] = value;
  }
  return changes;
}

/** `--label KEY=VALUE` of a create or an import: the new instance's labels. */
export function newLabels(values: readonly string[]): Record<string, string> | undefined {
  if (values.length === 0) return undefined;
  const changes = labelChanges(values);
  for (const [key, value] of Object.entries(changes))
    if (value === null) throw usageError(`--label takes KEY=VALUE, not ${key}-`);
  return changes as Record<string, string>;
}

export const label: Command = {
  usage: 'label <name|#id> [KEY=VALUE | KEY-]...',
  summary:
    'set (KEY=VALUE) or remove (KEY-) labels of an instance; with none, show them (ls --label KEY=VALUE selects by them)',
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length === 0) {
      const labels = (await listInstances(client)).find((i) => i.instanceID === target.id)?.labels ?? {};
      if (ctx.json) return print(ctx, { instanceID: target.id, name: target.name, labels });
      const lines = Object.entries(labels).map(([key, value]) => `${key}=${value}\n`);
      return ctx.io.out(lines.length > 0 ? lines.join('') : `${target.name} has no labels\n`);
    }
    const modifiedData = labelChanges(rest);
    return change(ctx, target, () =>
      client.post('/tunnelAct/instanceMgr/modify', { instanceID: String(target.id), type: 'labels', modifiedData }),
    );
  },
};
