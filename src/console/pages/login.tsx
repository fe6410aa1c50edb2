import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, explain, get, post, setToken, type Me } from '../api';
import { Field, useTitle } from '../ui';

export interface LoginNotice {
  text: string;
  kind: 'ok' | 'error';
  /** What the daemon said, for whoever wants to know. */
  detail?: string;
}

/** What a refused login means, in plain words. */
function loginError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401 && /invalid username or password/i.test(err.message)) {
      return 'Wrong username or password.';
    }
    if (err.status === 429) {
      const wait = err.retryAfter ?? 60;
      return `Too many login attempts. Wait ${wait} second${wait === 1 ? '' : 's'} before trying again.`;
    }
  }
  return explain(err);
}

export function Login(props: { notice: LoginNotice | null; onLoggedIn: (me: Me) => void }) {
  useTitle('Log in');
  const [username, setUsername] = useState('');
  const [passwd, setPasswd] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => first.current?.focus(), []);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!username || !passwd) {
      setError('Enter your username and password.');
      return;
    }
    setBusy(true);
    setError('');
    try {
      const login = await post<{ token: string }>('/login', { username, passwd });
      setToken(login.data.token);
      const who = await get<Me>('/whoami');
      props.onLoggedIn(who.data);
    } catch (err) {
      setToken(null);
      setError(loginError(err));
      setBusy(false);
    }
  };

  const notice = error ? null : props.notice;
  return (
    <main class="login" id="main">
      <form class="login-box" onSubmit={submit} noValidate aria-labelledby="login-title">
        <h1 id="login-title">
          <span class="brand">tunnelward</span> console
        </h1>
        {notice && (
          <p
            class={`notice notice-${notice.kind}`}
            role={notice.kind === 'error' ? 'alert' : 'status'}
            data-detail={notice.detail}
          >
            {notice.text}
          </p>
        )}
        {error && (
          <p class="notice notice-error" role="alert">
            {error}
          </p>
        )}
        <Field label="Username">
          {({ id }) => (
            <input
              id={id}
              name="username"
              ref={first}
              autocomplete="username"
              value={username}
              onInput={(e) => setUsername(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Password">
          {({ id }) => (
            <input
              id={id}
              name="password"
              type="password"
              autocomplete="current-password"
              value={passwd}
              onInput={(e) => setPasswd(e.currentTarget.value)}
            />
          )}
        </Field>
        <button type="submit" class="primary wide" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
