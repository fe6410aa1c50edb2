import { useEffect, useRef, useState } from 'preact/hooks';
import {
  atLeast,
  explain,
  get,
  post,
  ROLES,
  serverNow,
  type ApiKey,
  type Me,
  type NewApiKey,
  type Role,
  type User,
} from '../api';
import { dateTime } from '../format';
import { Confirm, Dialog, ErrorText, Field, FormDialog, useSession, useTitle } from '../ui';

const KEY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

function keyNameProblem(name: string): string | undefined {
  return KEY_NAME.test(name) ? undefined : '1 to 64 letters, digits, "_", "." or "-".';
}

/** A whole number of at least 1, or nothing: the value of an optional number field. */
function positive(text: string): { value?: number; error?: string } {
  const trimmed = text.trim();
  if (!trimmed) return {};
  return /^\d{1,9}$/.test(trimmed) && Number(trimmed) > 0 ? { value: Number(trimmed) } : { error: 'A whole number.' };
}

const UNIT_SECS = { hours: 3600, days: 86_400, weeks: 604_800 };
type Unit = keyof typeof UNIT_SECS;

/** The roles a key may have: at most the creator's and at most the owner's. */
const rolesFor = (creator: Role, owner: Role): Role[] => ROLES.filter((r) => atLeast(creator, r) && atLeast(owner, r));

const isExpired = (key: ApiKey) => key.expiresAt !== null && Date.parse(key.expiresAt) <= serverNow();

type DialogState = { kind: 'create' } | { kind: 'revoke'; key: ApiKey } | null;

/** Personal API keys: your own; a superuser's for anyone. The key itself is seen once, when it is created. */
export function ApiKeysPage() {
  useTitle('API keys');
  const { me, notify } = useSession();
  const superuser = me.type === 'superuser';
  const [ownerId, setOwnerId] = useState(me.userID);
  const [users, setUsers] = useState<User[]>([]);
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [error, setError] = useState('');
  const [dialog, setDialog] = useState<DialogState>(null);
  const [created, setCreated] = useState<NewApiKey | null>(null);
  /** The owner whose keys were asked for last: an older answer for another owner is dropped. */
  const asked = useRef(ownerId);

  const load = async (owner = asked.current) => {
    asked.current = owner;
    try {
      const reply = await get<ApiKey[]>('/apiKeyMgr/list', owner === me.userID ? {} : { userID: owner });
      if (asked.current !== owner) return;
      setKeys(reply.data);
      setError('');
    } catch (err) {
      if (asked.current === owner) setError(explain(err));
    }
  };
  useEffect(() => {
    setKeys(null);
    void load(ownerId);
  }, [ownerId]);
  useEffect(() => {
    if (!superuser) return;
    get<User[]>('/userMgr/list')
      .then((reply) => setUsers(reply.data))
      .catch((err: unknown) => setError(explain(err)));
  }, [superuser]);

  const ownerName = ownerId === me.userID ? me.username : users.find((u) => u.UserID === ownerId)?.Username;

  return (
    <section class="page" aria-labelledby="keys-title">
      <div class="page-head">
        <h1 id="keys-title">API keys</h1>
        <span class="spacer" />
        {superuser && users.length > 0 && (
          <div class="inline-field">
            <label for="keys-owner">Keys of</label>
            <select id="keys-owner" value={String(ownerId)} onChange={(e) => setOwnerId(Number(e.currentTarget.value))}>
              {users.map((u) => (
                <option key={u.UserID} value={String(u.UserID)}>
                  {u.Username}
                  {u.UserID === me.userID ? ' (you)' : ''}
                </option>
              ))}
            </select>
          </div>
        )}
        <button type="button" class="primary" onClick={() => setDialog({ kind: 'create' })}>
          New API key
        </button>
      </div>
      <p class="muted intro">
        A key is a long-lived credential for a script or a job: it acts as its owner with the role it was given, sent as{' '}
        <code>Authorization: Bearer &lt;key&gt;</code> (or <code>tunnelward login --key</code>). A password change
        revokes every key of its user.
      </p>
      <ErrorText>{error}</ErrorText>
      {!keys && !error && <p class="muted">Loading…</p>}
      {keys && keys.length === 0 && (
        <p class="empty">
          {ownerId === me.userID ? 'You have no API keys.' : `${ownerName ?? 'This user'} has no API keys.`}
        </p>
      )}
      {keys && keys.length > 0 && (
        <div class="table-wrap">
          <table class="grid api-keys" aria-label={`API keys of ${ownerName ?? 'this user'}`}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Role</th>
                <th scope="col">Scope</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Rate</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.keyID} data-key={k.name}>
                  <th scope="row" data-label="Name">
                    <span>
                      {k.name}
                      <span class="key-id mono muted">{k.keyID}</span>
                    </span>
                  </th>
                  <td data-label="Role">{k.role}</td>
                  <td data-label="Scope">{k.scope}</td>
                  <td data-label="Created">
                    <span>
                      {dateTime(k.createdAt)}
                      {k.createdBy !== k.username && <span class="muted"> by {k.createdBy}</span>}
                    </span>
                  </td>
                  <td data-label="Last used">{k.lastUsedAt ? dateTime(k.lastUsedAt) : 'never'}</td>
                  <td data-label="Expires">
                    {k.expiresAt === null ? (
                      'never'
                    ) : (
                      <span>
                        {dateTime(k.expiresAt)} {isExpired(k) && <span class="badge state-failed">expired</span>}
                      </span>
                    )}
                  </td>
                  <td data-label="Rate" class="num">
                    {k.ratePerMinute}/min
                  </td>
                  <td data-label="Actions" class="actions-cell">
                    <button
                      type="button"
                      class="small danger"
                      aria-label={`Revoke ${k.name}`}
                      onClick={() => setDialog({ kind: 'revoke', key: k })}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      {dialog?.kind === 'create' && (
        <CreateKey
          me={me}
          users={users}
          ownerId={ownerId}
          onClose={() => setDialog(null)}
          onCreated={async (key) => {
            setCreated(key);
            if (key.userID !== ownerId) setOwnerId(key.userID);
            else await load(ownerId);
          }}
        />
      )}
      {dialog?.kind === 'revoke' && (
        <Confirm
          title={`Revoke API key ${dialog.key.name}?`}
          confirmLabel="Revoke key"
          onClose={() => setDialog(null)}
          onConfirm={async () => {
            const reply = await post('/apiKeyMgr/revoke', { keyID: dialog.key.keyID });
            notify(reply.message);
            await load();
          }}
        >
          <p>
            Whatever uses it is refused from now on, and streams opened with it close. It cannot be undone: a script
            that needs a key again gets a new one.
          </p>
        </Confirm>
      )}
      {created && <NewKeyShown created={created} onClose={() => setCreated(null)} />}
    </section>
  );
}

function CreateKey(props: {
  me: Me;
  users: User[];
  ownerId: number;
  onClose: () => void;
  onCreated: (key: NewApiKey) => Promise<void>;
}) {
  const { me } = props;
  const { notify } = useSession();
  const [ownerId, setOwnerId] = useState(props.ownerId);
  const ownerType = ownerId === me.userID ? me.type : props.users.find((u) => u.UserID === ownerId)?.Type;
  const roles = rolesFor(me.type, ownerType ?? 'visitor');
  const [name, setName] = useState('');
  // The API's default: the lower of the creator's role and the owner's.
  const [role, setRole] = useState<Role>(roles.at(-1)!);
  const [scope, setScope] = useState<ApiKey['scope']>('all');
  const [expires, setExpires] = useState('');
  const [unit, setUnit] = useState<Unit>('days');
  const [rate, setRate] = useState('');
  const [touched, setTouched] = useState(false);

  const problems = {
    name: keyNameProblem(name),
    expires: positive(expires).error,
    rate: positive(rate).error,
  };
  const invalid = Boolean(problems.name || problems.expires || problems.rate);

  const chooseOwner = (id: number) => {
    setOwnerId(id);
    const type = id === me.userID ? me.type : props.users.find((u) => u.UserID === id)?.Type;
    const allowed = rolesFor(me.type, type ?? 'visitor');
    if (!allowed.includes(role)) setRole(allowed.at(-1)!);
  };

  return (
    <FormDialog
      title="New API key"
      submitLabel="Create key"
      onClose={props.onClose}
      invalid={touched && invalid}
      onSubmit={async () => {
        setTouched(true);
        if (invalid) throw new Error('Correct the fields marked above.');
        const expiresIn = positive(expires).value;
        const ratePerMinute = positive(rate).value;
        const reply = await post<NewApiKey>('/apiKeyMgr/create', {
          name,
          role,
          scope,
          ...(ownerId !== me.userID ? { userID: ownerId } : {}),
          ...(expiresIn !== undefined ? { expiresIn: expiresIn * UNIT_SECS[unit] } : {}),
          ...(ratePerMinute !== undefined ? { ratePerMinute } : {}),
        });
        notify(reply.message);
        await props.onCreated(reply.data);
      }}
    >
      {me.type === 'superuser' && props.users.length > 0 && (
        <Field label="Owner" hint="The key acts as this user.">
          {({ id, describedBy }) => (
            <select
              id={id}
              aria-describedby={describedBy}
              value={String(ownerId)}
              onChange={(e) => chooseOwner(Number(e.currentTarget.value))}
            >
              {props.users.map((u) => (
                <option key={u.UserID} value={String(u.UserID)}>
                  {u.Username} ({u.Type})
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <Field label="Name" hint="Unique among the owner's keys." error={touched || name ? problems.name : undefined}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={name}
            autocomplete="off"
            spellcheck={false}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Role" hint="What the key may do: at most your role and the owner's.">
        {({ id, describedBy }) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as Role)}
          >
            {[...roles].reverse().map((r) => (
              <option key={r} value={r}>
                {r === 'visitor' ? 'visitor (read-only)' : r}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field label="Scope" hint="metrics: for Prometheus, GET /metrics alone (no X-Timestamp), with an admin role.">
        {({ id, describedBy }) => (
          <select
            id={id}
            aria-describedby={describedBy}
            value={scope}
            onChange={(e) => setScope(e.currentTarget.value as ApiKey['scope'])}
          >
            <option value="all">all (every route its role allows)</option>
            <option value="metrics">metrics (GET /metrics only)</option>
          </select>
        )}
      </Field>
      <div class="row">
        <Field label="Expires after" class="grow" hint="Empty: the key does not expire." error={problems.expires}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={expires}
              inputMode="numeric"
              autocomplete="off"
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setExpires(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Unit">
          {({ id }) => (
            <select id={id} value={unit} onChange={(e) => setUnit(e.currentTarget.value as Unit)}>
              {Object.keys(UNIT_SECS).map((u) => (
                <option key={u} value={u}>
                  {u}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <Field
        label="Requests a minute"
        hint="Empty: the per-token limit (setting RateLimit.PerToken); only a superuser may give more."
        error={problems.rate}
      >
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={rate}
            inputMode="numeric"
            autocomplete="off"
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setRate(e.currentTarget.value)}
          />
        )}
      </Field>
    </FormDialog>
  );
}

/** Puts text on the clipboard: the Clipboard API where the page may use it, else the browser's copy of a selection. */
async function copyText(text: string, field: HTMLInputElement | null): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // No Clipboard API outside a secure context (plain HTTP beyond loopback).
    field?.select();
    try {
      return document.execCommand('copy');
    } catch {
      return false;
    }
  }
}

/** The new key, this once: copied or not, it is gone from the page when the dialog closes. */
function NewKeyShown({ created, onClose }: { created: NewApiKey; onClose: () => void }) {
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState('');
  const expiry = created.expiresAt === null ? 'does not expire' : `expires ${dateTime(created.expiresAt)}`;
  return (
    <Dialog title={`API key ${created.name} created`} onClose={onClose}>
      <p class="notice notice-warn">
        <span>
          <strong>Copy it now: you will not see it again.</strong> tunnelward keeps only a hash of it. If it is lost,
          revoke it and create another.
        </span>
      </p>
      <Field
        label="The key"
        hint={`For ${created.username}, role ${created.role}, scope ${created.scope}, ${created.ratePerMinute} requests a minute; it ${expiry}.`}
      >
        {({ id, describedBy }) => (
          <input
            ref={field}
            id={id}
            class="mono"
            readOnly
            autocomplete="off"
            spellcheck={false}
            aria-describedby={describedBy}
            value={created.key}
            onFocus={(e) => e.currentTarget.select()}
          />
        )}
      </Field>
      <p role="status" class="copy-status">
        {copied}
      </p>
      <div class="actions">
        <button
          type="button"
          onClick={async () =>
            setCopied(
              (await copyText(created.key, field.current))
                ? 'Copied to the clipboard.'
                : 'Could not copy: select the key and copy it.',
            )
          }
        >
          Copy
        </button>
        <button type="button" class="primary" onClick={onClose}>
          Done
        </button>
      </div>
    </Dialog>
  );
}
