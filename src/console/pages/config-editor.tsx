import { parse, TomlError } from 'smol-toml';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { explain, post } from '../api';
import { ErrorText, useSession } from '../ui';

type Table = Record<string, unknown>;

const isTable = (value: unknown): value is Table =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);

/** The TOML text given, read; a syntax error says where, in words a person can act on. */
function read(text: string): Table {
  try {
    return parse(text);
  } catch (err) {
    if (err instanceof TomlError) {
      const reason = (err.message.split('\n')[0] ?? '').replace(/^Invalid TOML document: /, '');
      throw new Error(`This is not valid TOML (line ${err.line}, column ${err.column}): ${reason}`, {
        cause: err,
      });
    }
    throw err;
  }
}

/**
 * A config file's top-level settings as TOML: the file up to its first [[proxies]] or [[visitors]], which the daemon
 * writes after every setting (cut from the text rather than written again, so the console needs no TOML writer).
 */
export function settingsText(content: string): string {
  return `${content.split(/^\[\[(?:proxies|visitors)\]\]/m)[0]!.trimEnd()}\n`;
}

/** Every value of a settings table by its dotted name (`auth.token`, `metadatas.owner`); arrays are values. */
function leaves(table: Table, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  for (const [key, value] of Object.entries(table)) {
    if (isTable(value)) leaves(value, `${prefix}${key}.`, out);
    else out.set(prefix + key, value);
  }
  return out;
}

/**
 * What the edit changed, as the configFile modification takes it: each changed or new key with its value, each
 * removed one as null. A key left as it was is not sent, so a secret shown masked is kept.
 */
export function settingsPatch(before: string, after: string): Table {
  const old = leaves(read(before));
  const next = leaves(read(after));
  const patch: Table = {};
  for (const [key, value] of next) {
    if (JSON.stringify(old.get(key)) !== JSON.stringify(value)) patch[key] = value;
  }
  for (const key of old.keys()) if (!next.has(key)) patch[key] = null;
  return patch;
}

/**
 * The top of an instance's config file (server, auth, transport, log, ...) as TOML text to edit. Saving sends only
 * what changed through the configFile modification; a refusal shows the daemon's message and keeps the text.
 */
export function SettingsEditor(props: { instanceID: number; content: string; masked: boolean; onSaved: () => void }) {
  const { notify } = useSession();
  const original = useMemo(() => settingsText(props.content), [props.content]);
  /** The text the edit began from: what is compared with the draft, even if the file changes meanwhile. */
  const [base, setBase] = useState(original);
  const [draft, setDraft] = useState(original);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const dirty = draft !== base;
  useEffect(() => {
    if (dirty) return;
    setBase(original);
    setDraft(original);
  }, [original]);

  return (
    <form
      class="settings-editor"
      onSubmit={async (e) => {
        e.preventDefault();
        setError('');
        let patch: Table;
        try {
          patch = settingsPatch(base, draft);
        } catch (err) {
          setError(explain(err));
          return;
        }
        if (Object.keys(patch).length === 0) {
          setError('Nothing changed.');
          return;
        }
        setBusy(true);
        try {
          const reply = await post('/tunnelAct/instanceMgr/modify', {
            instanceID: props.instanceID,
            type: 'configFile',
            modifiedData: patch,
          });
          notify(reply.message);
          setBase(draft);
          props.onSaved();
        } catch (err) {
          setError(explain(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <div class="field">
        <label for="settings-toml">Top-level settings (TOML)</label>
        <textarea
          id="settings-toml"
          class="code"
          rows={Math.min(24, Math.max(8, draft.split('\n').length + 1))}
          spellcheck={false}
          autocomplete="off"
          aria-describedby="settings-toml-hint"
          aria-invalid={error !== '' || undefined}
          value={draft}
          onInput={(e) => setDraft(e.currentTarget.value)}
        />
        <small id="settings-toml-hint" class="hint">
          Server, auth, transport, log and the other keys above the proxies. Proxies and visitors are edited in their
          own sections. A running tunnel restarts to apply a change.
          {props.masked ? ' Secrets show as ******** and are kept unless you type a new value.' : ''}
        </small>
      </div>
      <ErrorText>{error}</ErrorText>
      <div class="savebar">
        <button type="submit" class="primary" disabled={busy || !dirty}>
          {busy ? 'Saving…' : 'Save settings'}
        </button>
        <button
          type="button"
          disabled={busy || (!dirty && draft === original)}
          onClick={() => {
            setBase(original);
            setDraft(original);
            setError('');
          }}
        >
          Discard changes
        </button>
      </div>
    </form>
  );
}
