import { useState } from 'preact/hooks';
import { post } from '../api';
import { Check, Field, FormDialog, useSession } from '../ui';

const NAME_RULE = /^[A-Za-z0-9_.-]{1,64}$/;

export function nameProblem(name: string): string | undefined {
  if (!name) return 'A name is required.';
  if (!NAME_RULE.test(name)) return 'Up to 64 letters, digits, "_", "." or "-".';
  return undefined;
}

export function portProblem(value: string, { required = true, min = 1 } = {}): string | undefined {
  if (value === '') return required ? 'A port is required.' : undefined;
  if (!/^\d{1,5}$/.test(value) || Number(value) < min || Number(value) > 65535) return `A port from ${min} to 65535.`;
  return undefined;
}

export function CreateInstance({ onClose }: { onClose: () => void }) {
  const { notify } = useSession();
  const [name, setName] = useState('');
  const [serverAddr, setServerAddr] = useState('');
  const [serverPort, setServerPort] = useState('7000');
  const [authMethod, setAuthMethod] = useState('token');
  const [authToken, setAuthToken] = useState('');
  const [runUser, setRunUser] = useState('');
  const [bootAtStart, setBootAtStart] = useState(false);
  const [touched, setTouched] = useState(false);
  const problems = {
    name: nameProblem(name),
    serverAddr: serverAddr.trim() ? undefined : 'The frps server address is required.',
    serverPort: portProblem(serverPort),
  };
  const invalid = Object.values(problems).some(Boolean);
  const shown = (p: string | undefined) => (touched ? p : undefined);

  return (
    <FormDialog
      title="New instance"
      submitLabel="Create instance"
      onClose={onClose}
      invalid={touched && invalid}
      onSubmit={async () => {
        setTouched(true);
        if (invalid) throw new Error('Correct the fields marked above.');
        const reply = await post<{ instanceID: number; bootServiceError?: string }>('/tunnelAct/instanceMgr/create', {
          instanceInfo: { name, serverAddr: serverAddr.trim(), serverPort, auth_method: authMethod },
          bootAtStart,
          ...(runUser.trim() ? { runUser: runUser.trim() } : {}),
          additionalProperties: authMethod === 'token' && authToken ? { 'auth.token': authToken } : {},
        });
        notify(reply.message + (reply.data.bootServiceError ? ` (boot service: ${reply.data.bootServiceError})` : ''));
        location.hash = `#/instances/${reply.data.instanceID}`;
      }}
    >
      <Field label="Name" error={shown(problems.name)} hint='Letters, digits, "_", "." and "-"'>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={name}
            required
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
      <div class="row">
        <Field label="Server address" error={shown(problems.serverAddr)} class="grow">
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={serverAddr}
              placeholder="frps.example.com"
              required
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setServerAddr(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Server port" error={shown(problems.serverPort)}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={serverPort}
              inputMode="numeric"
              size={6}
              required
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setServerPort(e.currentTarget.value.trim())}
            />
          )}
        </Field>
      </div>
      <div class="row">
        <Field label="Authentication">
          {({ id }) => (
            <select id={id} value={authMethod} onChange={(e) => setAuthMethod(e.currentTarget.value)}>
              <option value="token">token</option>
              <option value="oidc">oidc</option>
            </select>
          )}
        </Field>
        {authMethod === 'token' && (
          <Field label="Token" class="grow" hint="auth.token; leave empty if the server needs none">
            {({ id, describedBy }) => (
              <input
                id={id}
                type="password"
                autocomplete="off"
                value={authToken}
                aria-describedby={describedBy}
                onInput={(e) => setAuthToken(e.currentTarget.value)}
              />
            )}
          </Field>
        )}
      </div>
      <Field label="Run as user" hint="An operating-system user; root when left empty">
        {({ id, describedBy }) => (
          <input
            id={id}
            value={runUser}
            placeholder="root"
            aria-describedby={describedBy}
            onInput={(e) => setRunUser(e.currentTarget.value)}
          />
        )}
      </Field>
      <Check label="Start at boot" checked={bootAtStart} onChange={setBootAtStart} />
    </FormDialog>
  );
}
