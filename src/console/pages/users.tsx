import { useEffect, useState } from 'preact/hooks';
import { explain, get, post, ROLES, type Role, type Session, type User } from '../api';
import { dateTime } from '../format';
import { Confirm, ErrorText, Field, FormDialog, useSession, useTitle } from '../ui';

const USERNAME = /^[A-Za-z0-9_.-]{3,32}$/;
const SYMBOLS = '!@#$%^&*()_+-=[]{}|;:,.<>?';

export function usernameProblem(name: string): string | undefined {
  return USERNAME.test(name) ? undefined : '3 to 32 letters, digits, "_", "." or "-".';
}

/** The daemon's password rules, checked as they are typed. */
export function passwordProblem(passwd: string): string | undefined {
  const missing = [
    passwd.length < 8 ? '8 or more characters' : '',
    passwd.length > 256 ? 'at most 256 characters' : '',
    /[A-Z]/.test(passwd) ? '' : 'an uppercase letter',
    /[a-z]/.test(passwd) ? '' : 'a lowercase letter',
    /\d/.test(passwd) ? '' : 'a digit',
    [...passwd].some((c) => SYMBOLS.includes(c)) ? '' : `one of ${SYMBOLS}`,
  ].filter(Boolean);
  return missing.length ? `Needs ${missing.join(', ')}.` : undefined;
}

type DialogState =
  | { kind: 'create' }
  | { kind: 'rename'; user: User }
  | { kind: 'password'; user: User }
  | { kind: 'remove'; user: User }
  | { kind: 'endSession'; session: Session }
  | null;

export function Users() {
  useTitle('Users and sessions');
  const { me, notify } = useSession();
  const [users, setUsers] = useState<User[] | null>(null);
  const [sessions, setSessions] = useState<Session[] | null>(null);
  const [error, setError] = useState('');
  const [dialog, setDialog] = useState<DialogState>(null);

  const load = async () => {
    try {
      const [u, s] = await Promise.all([get<User[]>('/userMgr/list'), get<Session[]>('/sessionMgr/list')]);
      setUsers(u.data);
      setSessions(s.data);
      setError('');
    } catch (err) {
      setError(explain(err));
    }
  };
  useEffect(() => {
    void load();
  }, []);

  const changeRole = async (user: User, newType: Role) => {
    try {
      const reply = await post('/userMgr/modifyType', { userID: user.UserID, newType });
      notify(reply.message);
    } catch (err) {
      notify(explain(err), 'error');
    }
    await load();
  };

  return (
    <section class="page" aria-labelledby="users-title">
      <div class="page-head">
        <h1 id="users-title">Users</h1>
        <span class="spacer" />
        <button type="button" class="primary" onClick={() => setDialog({ kind: 'create' })}>
          New user
        </button>
      </div>
      <ErrorText>{error}</ErrorText>
      {users && (
        <div class="table-wrap">
          <table class="grid users">
            <thead>
              <tr>
                <th scope="col">ID</th>
                <th scope="col">Username</th>
                <th scope="col">Role</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {users.map((u) => (
                <tr key={u.UserID} data-user={u.Username}>
                  <td data-label="ID" class="num">
                    {u.UserID}
                  </td>
                  <th scope="row" data-label="Username">
                    <span>
                      {u.Username}
                      {u.UserID === me.userID && <span class="muted"> (you)</span>}
                    </span>
                  </th>
                  <td data-label="Role">
                    <select
                      aria-label={`Role of ${u.Username}`}
                      value={u.Type}
                      onChange={(e) => changeRole(u, e.currentTarget.value as Role)}
                    >
                      {[...ROLES].reverse().map((r) => (
                        <option key={r} value={r}>
                          {r}
                        </option>
                      ))}
                    </select>
                  </td>
                  <td data-label="Created">{u.CreatedAt}</td>
                  <td data-label="Actions" class="actions-cell">
                    <button
                      type="button"
                      class="small"
                      aria-label={`Rename ${u.Username}`}
                      onClick={() => setDialog({ kind: 'rename', user: u })}
                    >
                      Rename
                    </button>
                    <button
                      type="button"
                      class="small"
                      aria-label={`Set the password of ${u.Username}`}
                      onClick={() => setDialog({ kind: 'password', user: u })}
                    >
                      Password
                    </button>
                    <button
                      type="button"
                      class="small danger"
                      aria-label={`Remove ${u.Username}`}
                      onClick={() => setDialog({ kind: 'remove', user: u })}
                    >
                      Remove
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <section class="panel" aria-labelledby="sessions-title">
        <div class="panel-head">
          <h2 id="sessions-title">Sessions</h2>
          <span class="spacer" />
          <button type="button" class="small" onClick={load}>
            Refresh
          </button>
        </div>
        {sessions && sessions.length === 0 && <p class="empty">No active sessions.</p>}
        {sessions && sessions.length > 0 && (
          <div class="table-wrap">
            <table class="grid sessions">
              <thead>
                <tr>
                  <th scope="col">User</th>
                  <th scope="col">Session</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {sessions.map((s) => (
                  <tr key={s.ID}>
                    <th scope="row" data-label="User">
                      {s.Username}
                    </th>
                    <td data-label="Session" class="mono">
                      {s.ID.slice(0, 12)}
                    </td>
                    <td data-label="Expires">{dateTime(s.ExpireAt)}</td>
                    <td data-label="Actions" class="actions-cell">
                      <button
                        type="button"
                        class="small danger"
                        aria-label={`End session ${s.ID.slice(0, 12)} of ${s.Username}`}
                        onClick={() => setDialog({ kind: 'endSession', session: s })}
                      >
                        End
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      {dialog?.kind === 'create' && <CreateUser onClose={() => setDialog(null)} onDone={load} />}
      {dialog?.kind === 'rename' && <RenameUser user={dialog.user} onClose={() => setDialog(null)} onDone={load} />}
      {dialog?.kind === 'password' && <SetPassword user={dialog.user} onClose={() => setDialog(null)} onDone={load} />}
      {dialog?.kind === 'remove' && (
        <Confirm
          title={`Remove ${dialog.user.Username}?`}
          confirmLabel="Remove user"
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            const reply = await post('/userMgr/remove', { targetUserID: dialog.user.UserID });
            notify(reply.message);
            await load();
          }}
        >
          <p>Their sessions end at once. It cannot be undone.</p>
        </Confirm>
      )}
      {dialog?.kind === 'endSession' && (
        <Confirm
          title={`End this session of ${dialog.session.Username}?`}
          confirmLabel="End session"
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            const reply = await post('/sessionMgr/remove', { sessionID: dialog.session.ID });
            notify(reply.message);
            await load();
          }}
        >
          <p>
            Its token stops working at once
            {dialog.session.UserID === me.userID ? ' (if it is this one, you are logged out)' : ''}.
          </p>
        </Confirm>
      )}
    </section>
  );
}

function CreateUser({ onClose, onDone }: { onClose: () => void; onDone: () => Promise<void> }) {
  const { notify } = useSession();
  const [username, setUsername] = useState('');
  const [passwd, setPasswd] = useState('');
  const [type, setType] = useState<Role>('visitor');
  const [touched, setTouched] = useState(false);
  const problems = { username: usernameProblem(username), passwd: passwordProblem(passwd) };
  const invalid = Boolean(problems.username || problems.passwd);
  return (
    <FormDialog
      title="New user"
      submitLabel="Create user"
      onClose={onClose}
      invalid={touched && invalid}
      onSubmit={async () => {
        setTouched(true);
        if (invalid) throw new Error('Correct the fields marked above.');
        const reply = await post('/userMgr/create', { username, passwd, type });
        notify(reply.message);
        await onDone();
      }}
    >
      <Field label="Username" error={touched || username ? problems.username : undefined}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={username}
            autocomplete="off"
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Password" error={touched || passwd ? problems.passwd : undefined}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            type="password"
            autocomplete="new-password"
            value={passwd}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setPasswd(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Role">
        {({ id }) => (
          <select id={id} value={type} onChange={(e) => setType(e.currentTarget.value as Role)}>
            <option value="visitor">visitor (read-only)</option>
            <option value="admin">admin</option>
            <option value="superuser">superuser</option>
          </select>
        )}
      </Field>
    </FormDialog>
  );
}

function RenameUser(props: { user: User; onClose: () => void; onDone: () => Promise<void> }) {
  const { notify } = useSession();
  const [username, setUsername] = useState(props.user.Username);
  const problem = usernameProblem(username);
  return (
    <FormDialog
      title={`Rename ${props.user.Username}`}
      submitLabel="Rename"
      onClose={props.onClose}
      invalid={Boolean(problem) || username === props.user.Username}
      onSubmit={async () => {
        const reply = await post('/userMgr/modify', { userID: props.user.UserID, username });
        notify(reply.message);
        await props.onDone();
      }}
    >
      <Field label="New username" error={problem}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={username}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        )}
      </Field>
    </FormDialog>
  );
}

function SetPassword(props: { user: User; onClose: () => void; onDone: () => Promise<void> }) {
  const { notify } = useSession();
  const [passwd, setPasswd] = useState('');
  const problem = passwd ? passwordProblem(passwd) : undefined;
  return (
    <FormDialog
      title={`New password for ${props.user.Username}`}
      submitLabel="Set password"
      onClose={props.onClose}
      invalid={!passwd || Boolean(problem)}
      onSubmit={async () => {
        // The reply says what the new password ended: the other sessions, and how many API keys.
        const reply = await post('/userMgr/modify', { userID: props.user.UserID, passwd });
        notify(reply.message);
        await props.onDone();
      }}
    >
      <p class="muted" data-note="password-retires">
        A new password ends {props.user.Username}'s other sessions and revokes all of {props.user.Username}'s API keys.
      </p>
      <Field label="New password" error={problem}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            type="password"
            autocomplete="new-password"
            value={passwd}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setPasswd(e.currentTarget.value)}
          />
        )}
      </Field>
    </FormDialog>
  );
}
