import { useState } from 'preact/hooks';
import { explain, post } from '../api';
import { labelText } from '../instance-filter';
import { ErrorText, useSession } from '../ui';

/** `key=value` as typed: the pair, or why it is not one (the daemon checks the key and the value themselves). */
export function parseLabel(text: string): [string, string] | string {
  const trimmed = text.trim();
  const eq = trimmed.indexOf('=');
  if (eq <= 0) return 'A label is key=value, for example env=prod.';
  return [trimmed.slice(0, eq), trimmed.slice(eq + 1)];
}

/**
 * An instance's labels (what `--label` and the list's label filter select by). An admin adds one (`key=value`; the
 * same key again changes its value) or removes one, each a `labels` modify; a refusal shows the daemon's message
 * and keeps what was typed.
 */
export function InstanceLabels(props: {
  instanceID: number;
  labels: Record<string, string>;
  admin: boolean;
  onChanged: (labels: Record<string, string>) => void;
}) {
  const { notify } = useSession();
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const entries = Object.entries(props.labels ?? {});

  const change = async (modifiedData: Record<string, string | null>): Promise<boolean> => {
    setBusy(true);
    setError('');
    try {
      const reply = await post<{ labels: Record<string, string> }>('/tunnelAct/instanceMgr/modify', {
        instanceID: props.instanceID,
        type: 'labels',
        modifiedData,
      });
      notify(reply.message);
      props.onChanged(reply.data.labels);
      return true;
    } catch (err) {
      setError(explain(err));
      return false;
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="labels-title" class="panel">
      <div class="panel-head">
        <h2 id="labels-title">Labels</h2>
        <span class="muted">what the list's label filter and the CLI's --label select by</span>
      </div>
      {entries.length === 0 ? (
        <p class="empty">No labels.{props.admin ? ' Add one below.' : ''}</p>
      ) : (
        <ul class="labels" aria-label={`Labels (${entries.length})`}>
          {entries.map(([key, value]) => (
            <li key={key} class="label-chip" data-label-key={key}>
              <span>{labelText(key, value)}</span>
              {props.admin && (
                <button
                  type="button"
                  class="remove"
                  aria-label={`Remove label ${labelText(key, value)}`}
                  title="Remove"
                  disabled={busy}
                  onClick={() => void change({ [key]: null })}
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      {props.admin && (
        <form
          class="inline-form labels-form"
          onSubmit={async (e) => {
            e.preventDefault();
            const label = parseLabel(text);
            if (typeof label === 'string') {
              setError(label);
              return;
            }
            if (await change({ [label[0]]: label[1] })) setText('');
          }}
        >
          <div class="field">
            <label for="label-new">New label</label>
            <input
              id="label-new"
              value={text}
              placeholder="env=prod"
              autocomplete="off"
              spellcheck={false}
              aria-describedby="label-new-hint"
              aria-invalid={error !== '' || undefined}
              onInput={(e) => setText(e.currentTarget.value)}
            />
            <small id="label-new-hint" class="hint">
              key=value; a key it has already gets the new value.
            </small>
          </div>
          <button type="submit" class="primary" disabled={busy || text.trim() === ''}>
            {busy ? 'Saving…' : 'Add label'}
          </button>
        </form>
      )}
      <ErrorText>{error}</ErrorText>
    </section>
  );
}
