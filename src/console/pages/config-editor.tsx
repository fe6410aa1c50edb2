import { useEffect, useState } from 'preact/hooks';
import { ApiError, explain, get, post } from '../api';
import { ErrorText } from '../ui';

/** An instance's config file as the export gives it: `version` is what a replace takes as its baseVersion. */
export interface ExportedConfig {
  content: string;
  masked: boolean;
  version: string;
}

/** How the daemon applied a replaced file (replaceConfig's `applied`). */
type Applied = 'unchanged' | 'reload' | 'restart' | 'on next start' | 'not applied';

interface Replaced {
  changed: boolean;
  applied: Applied;
  diff: string;
  version: string;
  notes: string[];
}

const APPLIED: Record<Applied, string> = {
  unchanged: 'Nothing to apply: the file is as it was.',
  reload: 'Saved and applied by a reload: the running tunnel took the change without a restart.',
  restart: 'Saved and applied by a restart of the tunnel.',
  'on next start': 'Saved; it applies at the next start.',
  'not applied': 'Checked, not applied.',
};

/** A unified diff with each line marked by what it is (the +/- sign stays: colour is never the only sign). */
export function Diff({ diff }: { diff: string }) {
  const kind = (line: string) =>
    line.startsWith('+++') || line.startsWith('---')
      ? undefined
      : ({ '+': 'add', '-': 'del', '@': 'hunk' } as Record<string, string>)[line[0] ?? ''];
  return (
    <pre class="config diff" tabIndex={0} aria-label="Changes (unified diff)">
      {diff
        .split('\n')
        .filter(Boolean)
        .map((line, i) => (
          <span key={i} class={kind(line)}>
            {line}
            {'\n'}
          </span>
        ))}
    </pre>
  );
}

/**
 * The whole config file (settings, proxies, visitors) as TOML text to edit, saved as `tunnelward edit` saves it: the
 * text replaces the file (replaceConfig) if the file is still at the version the edit began from. The reply says how
 * it was applied, with its notes and diff; a refusal shows the daemon's message and keeps the text; a file changed
 * meanwhile can be loaded again, the text typed staying on show. A secret left masked keeps its value.
 */
export function ConfigEditor(props: { instanceID: number; config: ExportedConfig; onSaved: () => void }) {
  /** The file the edit began from: its version goes with the save, even if the file changes meanwhile. */
  const [base, setBase] = useState(props.config);
  const [draft, setDraft] = useState(props.config.content);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [outcome, setOutcome] = useState<Replaced | null>(null);
  /** The file as it is now, when a save was refused because it changed; and the text that was not applied. */
  const [conflict, setConflict] = useState<{ current: ExportedConfig; mine: string } | null>(null);
  const [unapplied, setUnapplied] = useState('');
  /** The version a save of ours replaced: the file as it was, which a reload that was already under way may bring. */
  const [replaced, setReplaced] = useState('');
  const dirty = draft !== base.content;
  // The file as the page last read it is shown unless the text is being edited: that includes the file as a save
  // left it, whichever comes first of the save's reply and the page's reload (an event may reload it before).
  useEffect(() => {
    if (dirty || props.config.version === replaced) return;
    if (props.config.version === base.version && props.config.content === base.content) return;
    setBase(props.config);
    setDraft(props.config.content);
  }, [props.config.content, props.config.version, dirty]);

  const startOver = (from: ExportedConfig) => {
    setBase(from);
    setDraft(from.content);
    setError('');
    setConflict(null);
  };

  return (
    <form
      class="config-editor"
      onSubmit={async (e) => {
        e.preventDefault();
        setError('');
        setOutcome(null);
        setConflict(null);
        setBusy(true);
        try {
          const reply = await post<Replaced>('/tunnelAct/instanceMgr/replaceConfig', {
            instanceID: props.instanceID,
            content: draft,
            baseVersion: base.version,
          });
          setOutcome(reply.data);
          if (reply.data.version !== base.version) setReplaced(base.version);
          setBase({ ...base, content: draft, version: reply.data.version });
          setUnapplied('');
          props.onSaved();
        } catch (err) {
          setError(explain(err));
          if (err instanceof ApiError && err.status === 409) {
            // A 409 is also a proxy clash: only a new version means someone else changed the file.
            const current = await get<ExportedConfig>('/tunnelAct/instanceMgr/export', {
              instanceID: props.instanceID,
            }).catch(() => null);
            if (current && current.data.version !== base.version) setConflict({ current: current.data, mine: draft });
          }
        } finally {
          setBusy(false);
        }
      }}
    >
      <div class="field">
        <label for="config-toml">Config file (TOML)</label>
        <textarea
          id="config-toml"
          class="code"
          rows={Math.min(30, Math.max(10, draft.split('\n').length + 1))}
          spellcheck={false}
          autocomplete="off"
          aria-describedby="config-toml-hint"
          aria-invalid={error !== '' || undefined}
          value={draft}
          onInput={(e) => setDraft(e.currentTarget.value)}
        />
        <small id="config-toml-hint" class="hint">
          The whole file: settings, proxies and visitors. A running tunnel takes a change of proxies or visitors by a
          reload, and restarts for a change of settings.
          {props.config.masked ? ' Secrets show as ******** and keep their value unless you type a new one.' : ''}
        </small>
      </div>
      <ErrorText>{error}</ErrorText>
      {conflict && (
        <div class="conflict notice notice-warn">
          <p>
            The file was changed by someone else since you opened it (version {base.version}, now{' '}
            {conflict.current.version}). Your text was not applied.
          </p>
          <button
            type="button"
            onClick={() => {
              setUnapplied(conflict.mine);
              startOver(conflict.current);
            }}
          >
            Load the current file
          </button>
        </div>
      )}
      <div class="savebar">
        <button type="submit" class="primary" disabled={busy || !dirty}>
          {busy ? 'Saving…' : 'Save file'}
        </button>
        <button type="button" disabled={busy || !dirty} onClick={() => startOver(props.config)}>
          Discard changes
        </button>
      </div>
      {unapplied && (
        <details class="conflict">
          <summary>Your text, not applied (to make your change again)</summary>
          <pre class="config" tabIndex={0} aria-label="Your text, not applied">
            {unapplied}
          </pre>
        </details>
      )}
      <div class="edit-outcome" role="status" aria-live="polite">
        {outcome && (
          <>
            <p>
              <strong data-applied={outcome.applied}>{APPLIED[outcome.applied]}</strong>
            </p>
            {outcome.notes.length > 0 && (
              <ul aria-label="Notes">
                {outcome.notes.map((note) => (
                  <li key={note}>{note}</li>
                ))}
              </ul>
            )}
          </>
        )}
      </div>
      {outcome?.changed && (
        <div class="edit-outcome">
          <h3 class="visually-hidden">Changes</h3>
          {outcome.diff === '' ? (
            <p class="muted">Only secret values changed: they are not shown.</p>
          ) : (
            <Diff diff={outcome.diff} />
          )}
        </div>
      )}
    </form>
  );
}
