import { useCallback, useEffect, useState } from 'preact/hooks';
import { explain, get, post } from '../api';
import type { components } from '../../generated/api-types.js';
import { dateTime } from '../format';
import { ErrorText, FormDialog, useSession } from '../ui';
import { Diff } from './config-editor';

type Revision = components['schemas']['Revision'];
type RevisionList = components['schemas']['RevisionList'];
type RevisionDiff = components['schemas']['RevisionDiff'];
type Rolled = components['schemas']['InstanceConfigReplaced'];

/** What a revision's request names, short: `proxy=web keys=localPort,type`. */
function describe(request: Record<string, unknown>): string {
  return Object.entries(request)
    .filter(([, v]) => v === null || typeof v !== 'object' || (Array.isArray(v) && v.length > 0))
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join(',') : String(v)}`)
    .join(' ');
}

/**
 * The revisions of the instance's config file, newest first: who changed what, when, how it was applied; each one's
 * diff from the revision before it; and, for one who may change the instance, a rollback to it (its plan and diff
 * shown first, by a dry run).
 */
export function History({
  instanceID,
  mayChange,
  stamp,
  onRolledBack,
}: {
  instanceID: number;
  mayChange: boolean;
  /** Changes when the instance changed: the list is read again. */
  stamp: unknown;
  onRolledBack: () => void;
}) {
  const { notify } = useSession();
  const [list, setList] = useState<RevisionList | null>(null);
  const [error, setError] = useState('');
  const [open, setOpen] = useState<{ revision: number; diff: string } | null>(null);
  const [rollback, setRollback] = useState<{ revision: number; preview: Rolled | null; error: string } | null>(null);

  const load = useCallback(async () => {
    try {
      setList((await get<RevisionList>('/tunnelAct/instanceMgr/history', { instanceID, limit: 20 })).data);
      setError('');
    } catch (err) {
      setError(explain(err));
    }
  }, [instanceID]);
  useEffect(() => void load(), [load, stamp]);

  const showDiff = async (r: Revision) => {
    if (open?.revision === r.revision) return setOpen(null);
    try {
      const previous = list?.revisions.find((x) => x.revision < r.revision);
      if (!previous) return setOpen({ revision: r.revision, diff: '' });
      const reply = await get<RevisionDiff>('/tunnelAct/instanceMgr/diff', {
        instanceID,
        from: previous.revision,
        to: r.revision,
      });
      setOpen({ revision: r.revision, diff: reply.data.diff });
    } catch (err) {
      notify(explain(err), 'error');
    }
  };

  const askRollback = async (r: Revision) => {
    setRollback({ revision: r.revision, preview: null, error: '' });
    try {
      const dry = await post<Rolled>('/tunnelAct/instanceMgr/rollback', {
        instanceID,
        revision: r.revision,
        dryRun: true,
      });
      setRollback({ revision: r.revision, preview: dry.data, error: '' });
    } catch (err) {
      setRollback({ revision: r.revision, preview: null, error: explain(err) });
    }
  };

  return (
    <section aria-labelledby="history-title" class="panel">
      <div class="panel-head">
        <h2 id="history-title">History</h2>
        {list && (
          <span class="muted">
            at revision {list.current}; {list.total} kept
          </span>
        )}
      </div>
      <ErrorText>{error}</ErrorText>
      {list && (
        <div class="table-wrap">
          <table class="grid history">
            <thead>
              <tr>
                <th scope="col">Revision</th>
                <th scope="col">When</th>
                <th scope="col">By</th>
                <th scope="col">Change</th>
                <th scope="col">Applied</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.revisions.map((r) => (
                <>
                  <tr key={r.revision} data-revision={r.revision} aria-current={r.current ? 'true' : undefined}>
                    <td>
                      {r.revision}
                      {r.current && <span class="muted"> (current)</span>}
                    </td>
                    <td>{dateTime(r.at)}</td>
                    <td>{r.apiKey ? `${r.by} (key ${r.apiKey})` : r.by}</td>
                    <td>
                      {r.kind} <span class="muted">{describe(r.request)}</span>
                    </td>
                    <td>{r.outcome}</td>
                    <td class="actions">
                      <button
                        type="button"
                        class="link"
                        onClick={() => void showDiff(r)}
                        aria-expanded={open?.revision === r.revision}
                      >
                        Diff
                      </button>
                      {mayChange && !r.current && (
                        <button type="button" class="link" onClick={() => void askRollback(r)}>
                          Roll back
                        </button>
                      )}
                    </td>
                  </tr>
                  {open?.revision === r.revision && (
                    <tr key={`${r.revision}-diff`} class="diff-row">
                      <td colSpan={6}>
                        {open.diff === '' ? (
                          <p class="muted">No earlier revision kept to compare with.</p>
                        ) : (
                          <Diff diff={open.diff} />
                        )}
                      </td>
                    </tr>
                  )}
                </>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {rollback && (
        <FormDialog
          title={`Roll back to revision ${rollback.revision}?`}
          submitLabel="Roll back"
          onClose={() => setRollback(null)}
          onSubmit={async () => {
            const reply = await post<Rolled>('/tunnelAct/instanceMgr/rollback', {
              instanceID,
              revision: rollback.revision,
              ...(list ? { baseRevision: list.current } : {}),
            });
            notify(reply.message);
            await load();
            onRolledBack();
          }}
          wide
        >
          <ErrorText>{rollback.error}</ErrorText>
          {!rollback.preview && !rollback.error && <p class="muted">Checking…</p>}
          {rollback.preview && (
            <>
              <p>
                The file goes back to revision {rollback.revision}, as a new revision:{' '}
                {rollback.preview.plan.action === 'none'
                  ? 'it is already so.'
                  : `${rollback.preview.plan.action} (${rollback.preview.plan.reason}).`}
              </p>
              {rollback.preview.diff !== '' && <Diff diff={rollback.preview.diff} />}
            </>
          )}
        </FormDialog>
      )}
    </section>
  );
}
