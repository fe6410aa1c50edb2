import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV_NAME } from '../config/go-template.js';
import type { ApiClient, DataOf, Reply } from './api.js';
import { flag, has, keyValues, type FlagSpec, type Parsed } from './args.js';
import { outcomeLine, print, type Command, type Context } from './command.js';
import { CliError, EXIT, usageError, type ExitCode } from './errors.js';
import { ID_FLAG, oneInstance, onlyInstance, type Target } from './instance-refs.js';
import { ask } from './prompt.js';
import { paint } from './render.js';

// The operator's edit loop: change an instance after it was made, from the whole file down to one key.

const MODIFY = '/tunnelAct/instanceMgr/modify';

/** Check and plan a change only: the daemon says what it would do and writes nothing. */
export const DRY_RUN_FLAG: FlagSpec = { name: 'dry-run' };

/** `dryRun: true` when --dry-run was given. */
export const dryRun = (args: Parsed): { dryRun?: true } => (has(args, 'dry-run') ? { dryRun: true } : {});

/** Sends one change of one instance and says how it went; a refusal is that instance's failure, not a crash. */
export async function change(
  ctx: Context,
  target: Target,
  send: () => Promise<Reply<Record<string, unknown>>>,
): Promise<ExitCode> {
  let ok = true;
  let message: string;
  let data: Record<string, unknown> = {};
  try {
    ({ message, data } = await send());
    if (typeof data.bootServiceError === 'string') {
      ok = false;
      message = `${message}: ${data.bootServiceError}`;
    }
  } catch (err) {
    if (!(err instanceof CliError) || err.exitCode !== EXIT.failed) throw err;
    ok = false;
    message = err.message;
  }
  if (ctx.json) print(ctx, { instanceID: target.id, name: target.name, ok, message, ...data });
  else {
    // A dry run is asked for its diff.
    if (data.dryRun === true && typeof data.diff === 'string') showDiff(ctx, data.diff);
    outcomeLine(ctx, ok, `${target.name} (${target.id}): ${message}`);
  }
  return ok ? EXIT.ok : EXIT.failed;
}

/** The positionals after the first (a subcommand such as `add`), as their own arguments. */
const after = (args: Parsed, count = 1): Parsed => ({ ...args, positional: args.positional.slice(count) });

const set: Command = {
  usage: 'set <name|#id> KEY=VALUE... [--run-user USER] [--dry-run]',
  summary:
    'change top-level config keys (values read like create --set; KEY=null removes one) and the run user; says how the change was applied (--dry-run: what it would do)',
  flags: [ID_FLAG, { name: 'run-user', value: true }, DRY_RUN_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    const runUser = flag(ctx.args, 'run-user');
    if (rest.length === 0 && runUser === undefined) throw usageError('set needs KEY=VALUE or --run-user USER');
    const patch = keyValues(rest, 'set');
    let code: ExitCode = EXIT.ok;
    if (rest.length > 0) {
      code = await change(ctx, target, () =>
        client.post(MODIFY, {
          instanceID: String(target.id),
          type: 'configFile',
          modifiedData: patch,
          ...dryRun(ctx.args),
        }),
      );
    }
    if (runUser !== undefined && code === EXIT.ok && !has(ctx.args, 'dry-run')) {
      code = await change(ctx, target, () =>
        client.post(MODIFY, { instanceID: String(target.id), type: 'systemConfig', modifiedData: { runUser } }),
      );
    }
    return code;
  },
};

const PROXY_ACTIONS = ['add', 'set', 'rm', 'enable', 'disable'] as const;

const proxy: Command = {
  usage: 'proxy add|set <name|#id> PROXY KEY=VALUE... | proxy rm|enable|disable <name|#id> PROXY... [--dry-run]',
  summary:
    'add a proxy (type=tcp localPort=22 remotePort=6022 ...), change one (name=NEW renames it), remove, enable or disable proxies; a running tunnel reloads (--dry-run: what it would do)',
  flags: [ID_FLAG, DRY_RUN_FLAG],
  async run(ctx) {
    const action = ctx.args.positional[0] as (typeof PROXY_ACTIONS)[number];
    if (!PROXY_ACTIONS.includes(action)) throw usageError(`proxy needs one of ${PROXY_ACTIONS.join(', ')}`);
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, after(ctx.args));
    const [name, ...pairs] = rest;
    if (!name) throw usageError(`proxy ${action} needs the proxy's name`);
    const instanceID = String(target.id);
    if (action === 'add' || action === 'set') {
      const info = keyValues(pairs, `proxy ${action}`);
      if (action === 'add' && pairs.length === 0) throw usageError('proxy add needs at least type=...');
      return change(ctx, target, () =>
        action === 'add'
          ? client.postAsTyped('/tunnelAct/proxyMgr/create', {
              instanceID,
              proxyInfo: { name, ...info },
              ...dryRun(ctx.args),
            })
          : client.postAsTyped('/tunnelAct/proxyMgr/modify', {
              instanceID,
              oldName: name,
              proxyInfo: info,
              ...dryRun(ctx.args),
            }),
      );
    }
    // rm, enable and disable take several proxies: each is its own change, each said.
    let code: ExitCode = EXIT.ok;
    for (const proxyName of rest) {
      const done = await change(ctx, target, () =>
        action === 'rm'
          ? client.post('/tunnelAct/proxyMgr/delete', { instanceID, proxyName, ...dryRun(ctx.args) })
          : client.post('/tunnelAct/proxyMgr/setStatus', {
              instanceID,
              proxyName,
              enabled: action === 'enable',
              ...dryRun(ctx.args),
            }),
      );
      if (done !== EXIT.ok) code = done;
    }
    return code;
  },
};

const env: Command = {
  usage: 'env set <name|#id> KEY | env unset <name|#id> KEY... [--dry-run]',
  summary:
    "set an environment variable of the instance's tunnel (its value read from standard input, or asked without echo: never from the command line) or unset some",
  flags: [ID_FLAG, DRY_RUN_FLAG],
  async run(ctx) {
    const action = ctx.args.positional[0];
    if (action !== 'set' && action !== 'unset') throw usageError('env needs set or unset');
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, after(ctx.args));
    if (rest.length === 0) throw usageError(`env ${action} needs a variable name`);
    for (const key of rest) {
      if (key.includes('='))
        throw usageError(
          `env ${action} takes the name alone (${key.split('=')[0]}): a value on the command line is visible to every user of this host`,
        );
      if (!ENV_NAME.test(key)) throw usageError(`${key} is not an environment variable name`);
    }
    if (action === 'set' && rest.length > 1) throw usageError('env set takes one variable at a time');
    const changes: Record<string, string | null> = {};
    if (action === 'set') {
      let value: string;
      try {
        value = await ask(`value of ${rest[0]} for ${target.name}: `, true);
      } catch (err) {
        throw new CliError(EXIT.failed, `no value for ${rest[0]}: ${(err as Error).message}`);
      }
      changes[rest[0]!] = value;
    } else for (const key of rest) changes[key] = null;
    return change(ctx, target, () =>
      client.post(MODIFY, {
        instanceID: String(target.id),
        type: 'environment',
        modifiedData: changes,
        ...dryRun(ctx.args),
      }),
    );
  },
};

/** `NAME on|off`: one boolean of the instance's record (a `systemConfig` modify). */
const onOff = (word: string, summary: string, field: 'bootAtStart' | 'probes'): Command => ({
  usage: `${word} <name|#id> on|off`,
  summary,
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length !== 1 || (rest[0] !== 'on' && rest[0] !== 'off')) throw usageError(`${word} needs on or off`);
    return change(ctx, target, () =>
      client.post(MODIFY, {
        instanceID: String(target.id),
        type: 'systemConfig',
        modifiedData: { [field]: rest[0] === 'on' },
      }),
    );
  },
});

const boot = onOff('boot', 'start the instance at boot, or not', 'bootAtStart');
const probes = onOff(
  'probes',
  "probe the instance's proxies end to end (through its server and directly) while it runs, or not",
  'probes',
);

/**
 * `policy NAME [KEY=VALUE|KEY=null]...`: the instance's own supervision figures over the settings (disconnectedSecs,
 * unreachableSecs, memoryMaxMB); without pairs, what they are.
 */
const policy: Command = {
  usage: "policy <name|#id> [disconnectedSecs=N] [unreachableSecs=N] [memoryMaxMB=N] (KEY=null: the setting's)",
  summary:
    "the instance's own health policy and memory cap over the settings (Health.DisconnectedSecs, Health.UnreachableSecs, Instance.MemoryMaxMB); without pairs, shows them",
  flags: [ID_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const { target, rest } = await oneInstance(client, ctx.args);
    if (rest.length === 0) {
      const { data } = await client.get('/tunnelAct/instanceMgr/getInfo', { instanceID: target.id });
      const own = Object.entries(data.policy ?? {});
      if (ctx.json) ctx.io.out(`${JSON.stringify(data.policy ?? {})}\n`);
      else
        ctx.io.out(
          own.length === 0
            ? `${target.name}: the settings' figures\n`
            : `${own.map(([key, value]) => `${key}=${String(value)}`).join(' ')}\n`,
        );
      return EXIT.ok;
    }
    const changes: Record<string, number | string | null> = {};
    for (const pair of rest) {
      const at = pair.indexOf('=');
      if (at <= 0) throw usageError(`${pair}: expected KEY=VALUE (KEY=null goes back to the setting's)`);
      const value = pair.slice(at + 1);
      // A value that is not a number goes as it is: the daemon's refusal names the key and its rule.
      changes[pair.slice(0, at)] =
        value === 'null' ? null : value !== '' && Number.isFinite(Number(value)) ? Number(value) : value;
    }
    return change(ctx, target, () =>
      client.post(MODIFY, { instanceID: String(target.id), type: 'systemConfig', modifiedData: { policy: changes } }),
    );
  },
};

const readForEdit = async (client: ApiClient, id: number) =>
  (await client.get('/tunnelAct/instanceMgr/export', { instanceID: id })).data;

/** Comment lines put above the file when it is opened again, removed before it is sent. */
function header(lines: string[]): string {
  const body = lines.flatMap((line) => line.split('\n')).map((line) => `#   ${line}`);
  return [
    '# tunnelward: this file was not applied:',
    ...body,
    '# Fix it and save to try again; save it unchanged or empty to give up. These lines are removed before it is sent.',
    '',
  ].join('\n');
}

/** An editor command as git reads one: run as it is, or by the shell when it holds arguments or shell syntax. */
async function runEditor(editor: string, file: string): Promise<void> {
  const plain = !/[|&;<>()$`\\"' \t\n*?[#~=%]/.test(editor);
  const child = plain
    ? spawn(editor, [file], { stdio: 'inherit' })
    : spawn('/bin/sh', ['-c', `${editor} "$@"`, editor, file], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  }).catch((err: NodeJS.ErrnoException) => {
    throw new CliError(
      EXIT.failed,
      `cannot run the editor ${editor} (${err.code ?? err.message}): set VISUAL or EDITOR`,
    );
  });
  if (code !== 0) throw new CliError(EXIT.failed, `the editor (${editor}) exited with ${code}: nothing applied`);
}

export function showDiff(ctx: Context, diff: string): void {
  const colours: Record<string, 'green' | 'red' | 'grey'> = { '+': 'green', '-': 'red', '@': 'grey' };
  for (const line of diff.split('\n').filter(Boolean)) {
    const colour = line.startsWith('+++') || line.startsWith('---') ? undefined : colours[line[0]!];
    ctx.io.out(`${colour ? paint(line, colour, ctx.io.colour) : line}\n`);
  }
}

const edit: Command = {
  usage: 'edit <name|#id> [--dry-run]',
  summary:
    "the instance's whole config file in $VISUAL or $EDITOR (else vi); on save it is checked, shown as a diff and applied (--dry-run: checked and shown only), a refusal opens it again with the reason on top, and a file changed by someone else meanwhile is never overwritten",
  flags: [ID_FLAG, DRY_RUN_FLAG],
  async run(ctx) {
    const client = await ctx.client();
    const target = await onlyInstance(client, ctx.args);
    const editor = ctx.io.env.VISUAL || ctx.io.env.EDITOR || 'vi';
    let base = await readForEdit(client, target.id);
    let text = base.content;
    let top = '';
    // Private to this user: the file holds the tunnel's secrets when a superuser edits it.
    const dir = await mkdtemp(join(tmpdir(), 'tunnelward-edit-'));
    const file = join(dir, `${target.name}.toml`);
    const who = `${target.name} (${target.id})`;
    try {
      for (;;) {
        await writeFile(file, top + text, { mode: 0o600 });
        await runEditor(editor, file);
        let saved = await readFile(file, 'utf8');
        if (top !== '' && saved.startsWith(top)) saved = saved.slice(top.length);
        if (saved.trim() === '') {
          outcomeLine(ctx, true, `${who}: the file was left empty: nothing applied`);
          return EXIT.ok;
        }
        if (saved === text) {
          // Saved as it was opened: nothing to do, or (after a refusal) the refusal stands.
          outcomeLine(
            ctx,
            top === '',
            `${who}: no change${top === '' ? '' : ' since the file was opened again'}: nothing applied`,
          );
          return top === '' ? EXIT.ok : EXIT.failed;
        }
        let reply: Reply<DataOf<'post', '/tunnelAct/instanceMgr/replaceConfig'>>;
        try {
          reply = await client.post('/tunnelAct/instanceMgr/replaceConfig', {
            instanceID: String(target.id),
            content: saved,
            // Made against this revision (and this text): a change by someone else meanwhile is a 409.
            baseVersion: base.version,
            baseRevision: base.revision,
            ...dryRun(ctx.args),
          });
        } catch (err) {
          if (!(err instanceof CliError) || (err.status !== 400 && err.status !== 409)) throw err;
          const latest = await readForEdit(client, target.id);
          if (latest.version !== base.version || latest.revision !== base.revision) {
            ctx.io.err(
              `tunnelward edit: the config file of ${who} was changed by someone else while you edited it; your text was not applied: opening the file as it is now\n`,
            );
            top = header([
              `the config file was changed by someone else (revision ${base.revision} -> ${latest.revision}) while you edited it.`,
              'Your text was not applied; this is the file as it is now: make your change again.',
            ]);
            base = latest;
            text = latest.content;
          } else if (!ctx.io.terminal) {
            // No one at a terminal to fix it (a script as $EDITOR, CI): reopening would loop for ever.
            ctx.io.err(`tunnelward edit: ${who} refused the file: ${err.message}\n`);
            outcomeLine(ctx, false, `${who}: refused, and no terminal to reopen it on: nothing applied`);
            return EXIT.failed;
          } else {
            ctx.io.err(`tunnelward edit: ${who} refused the file: ${err.message}\nopening it again\n`);
            top = header([err.message]);
            text = saved;
          }
          continue;
        }
        const { message, data } = reply;
        if (ctx.json) print(ctx, { ...data, instanceID: target.id, name: target.name, message });
        else {
          showDiff(ctx, data.diff);
          if (data.changed && data.diff === '') ctx.io.out('(only secret values changed: they are not shown)\n');
          outcomeLine(ctx, true, `${who}: ${message}`);
        }
        return EXIT.ok;
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
};

export const EDIT_COMMANDS: Record<string, Command> = { edit, set, proxy, env, boot, probes, policy };
