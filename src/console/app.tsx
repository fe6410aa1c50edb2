import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import {
  atLeast,
  endSession,
  explain,
  get,
  getToken,
  onSessionEnded,
  post,
  serverNow,
  setToken,
  type Me,
  type SessionEnd,
} from './api';
import { EventStream } from './events';
import { HealthMonitor } from './health';
import { ApiKeysPage } from './pages/api-keys';
import { HealthIndicator, HealthPage } from './pages/health';
import { InstancePage } from './pages/instance';
import { Instances } from './pages/instances';
import { Login, type LoginNotice } from './pages/login';
import { SettingsPage } from './pages/settings';
import { SystemLog } from './pages/system-log';
import { Users, passwordProblem } from './pages/users';
import { Field, FormDialog, LinkIndicator, NotAllowed, Session, type NoticeKind, type SessionContext } from './ui';

/** The page named by the location's hash: `#/instances/3` is ['instances', '3']. Never holds a token. */
function useRoute(): string[] {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

function noticeFor(end: SessionEnd): LoginNotice {
  if (end.kind === 'logout') return { text: 'You have logged out.', kind: 'ok', detail: end.detail };
  if (end.kind === 'expired')
    return { text: 'Your session expired. Log in again to continue.', kind: 'error', detail: end.detail };
  return { text: 'Your session has ended. Log in again to continue.', kind: 'error', detail: end.detail };
}

export function App() {
  const [me, setMe] = useState<Me | null>(null);
  const [checking, setChecking] = useState(Boolean(getToken()));
  const [notice, setNotice] = useState<LoginNotice | null>(null);

  useEffect(() => {
    onSessionEnded((end) => {
      setMe(null);
      setNotice(noticeFor(end));
    });
    if (!getToken()) return;
    // A reload of the tab: the token in sessionStorage may still hold.
    get<Me>('/whoami')
      .then((reply) => setMe(reply.data))
      .catch((err: unknown) => {
        if (getToken()) {
          setToken(null);
          setNotice({ text: `Could not resume the session: ${explain(err)}`, kind: 'error' });
        }
      })
      .finally(() => setChecking(false));
  }, []);

  if (checking) return <p class="loading">Loading…</p>;
  if (!me) {
    return (
      <Login
        notice={notice}
        onLoggedIn={(who) => {
          setNotice(null);
          setMe(who);
        }}
      />
    );
  }
  return <Shell key={me.userID} me={me} />;
}

interface Notice {
  id: number;
  text: string;
  kind: NoticeKind;
}

function Shell({ me }: { me: Me }) {
  const route = useRoute();
  const events = useMemo(() => new EventStream(), []);
  const health = useMemo(() => (atLeast(me.type, 'admin') ? new HealthMonitor() : null), [me.type]);
  const [notices, setNotices] = useState<Notice[]>([]);
  const [changingPassword, setChangingPassword] = useState(false);
  const nextId = useRef(0);

  useEffect(() => {
    events.start();
    health?.start(events);
    // The event stream closes with 4401 when the token expires; should it be down then, ask once just after. (An
    // API key's credentials have no expiry: expireAt is null.)
    const expiresIn = me.expireAt === null ? undefined : Date.parse(me.expireAt) - serverNow() + 2000;
    const timer =
      expiresIn === undefined
        ? undefined
        : window.setTimeout(
            () => get('/whoami').catch(() => undefined),
            Math.min(Math.max(expiresIn, 1000), 2 ** 31 - 1),
          );
    return () => {
      events.stop();
      health?.stop();
      window.clearTimeout(timer);
    };
  }, [events, health, me.expireAt]);

  const session: SessionContext = useMemo(
    () => ({
      me,
      events,
      health,
      notify(text, kind = 'ok') {
        const id = ++nextId.current;
        setNotices((list) => [...list.slice(-3), { id, text, kind }]);
        if (kind === 'ok') window.setTimeout(() => setNotices((list) => list.filter((n) => n.id !== id)), 6000);
      },
    }),
    [me, events, health],
  );

  const logout = async () => {
    try {
      await get('/logout');
    } catch {
      // Ended on this side all the same.
    }
    endSession({ kind: 'logout', detail: 'logged out' });
  };

  const [page = 'instances', id] = route;
  let content;
  if (page === 'instances' && id) content = <InstancePage key={id} id={Number(id)} />;
  else if (page === 'instances') content = <Instances />;
  else if (page === 'settings')
    content = atLeast(me.type, 'admin') ? <SettingsPage /> : <NotAllowed what="The settings page" />;
  else if (page === 'health')
    content = health ? <HealthPage monitor={health} /> : <NotAllowed what="The health page" />;
  else if (page === 'api-keys') content = <ApiKeysPage />;
  else if (page === 'users')
    content = me.type === 'superuser' ? <Users /> : <NotAllowed what="The users and sessions page" />;
  else if (page === 'system-log') content = <SystemLog />;
  else content = <NotAllowed what="This page" />;

  const nav: Array<[string, string, boolean]> = [
    ['instances', 'Instances', true],
    ['settings', 'Settings', atLeast(me.type, 'admin')],
    ['health', 'Health', health !== null],
    ['users', 'Users', me.type === 'superuser'],
    ['api-keys', 'API keys', true],
    ['system-log', 'System log', true],
  ];

  return (
    <Session.Provider value={session}>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/instances">
          tunnelward
        </a>
        <nav aria-label="Pages">
          <ul>
            {nav
              .filter(([, , shown]) => shown)
              .map(([path, label]) => (
                <li key={path}>
                  <a href={`#/${path}`} aria-current={page === path ? 'page' : undefined}>
                    {label}
                  </a>
                </li>
              ))}
          </ul>
        </nav>
        <div class="who">
          {health && <HealthIndicator monitor={health} />}
          <LinkIndicator events={events} />
          <span class="user">
            {me.username} <span class="role">{me.type}</span>
          </span>
          <button type="button" class="small" onClick={() => setChangingPassword(true)}>
            Password
          </button>
          <button type="button" class="small" onClick={logout}>
            Log out
          </button>
        </div>
      </header>
      <div class="notices" aria-live="polite">
        {notices.map((n) => (
          <div key={n.id} class={`notice notice-${n.kind}`} role={n.kind === 'error' ? 'alert' : 'status'}>
            <span>{n.text}</span>
            <button
              type="button"
              class="close"
              aria-label="Dismiss"
              onClick={() => setNotices((list) => list.filter((x) => x.id !== n.id))}
            >
              ×
            </button>
          </div>
        ))}
      </div>
      <main id="main" tabIndex={-1}>
        {content}
      </main>
      {changingPassword && <OwnPassword me={me} onClose={() => setChangingPassword(false)} notify={session.notify} />}
    </Session.Provider>
  );
}

function OwnPassword(props: { me: Me; onClose: () => void; notify: SessionContext['notify'] }) {
  const [passwd, setPasswd] = useState('');
  const [again, setAgain] = useState('');
  const problem = passwd ? passwordProblem(passwd) : undefined;
  const mismatch = again && again !== passwd ? 'The two passwords differ.' : undefined;
  return (
    <FormDialog
      title="Change your password"
      submitLabel="Change password"
      invalid={!passwd || Boolean(problem) || again !== passwd}
      onClose={props.onClose}
      onSubmit={async () => {
        const reply = await post('/userMgr/modify', { userID: props.me.userID, passwd });
        props.notify(`${reply.message}. Your other sessions have ended.`);
      }}
    >
      <Field
        label="New password"
        error={problem}
        hint="8 or more characters with an uppercase letter, a lowercase letter, a digit and a symbol."
      >
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
      <Field label="New password again" error={mismatch}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            type="password"
            autocomplete="new-password"
            value={again}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setAgain(e.currentTarget.value)}
          />
        )}
      </Field>
    </FormDialog>
  );
}
