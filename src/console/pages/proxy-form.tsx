import { useState } from 'preact/hooks';
import { post, type Proxy } from '../api';
import { Check, Field, FormDialog } from '../ui';
import { portProblem } from './create-instance';

const TYPES = ['tcp', 'udp', 'http', 'https', 'tcpmux', 'stcp', 'sudp', 'xtcp'];
const WITH_REMOTE_PORT = new Set(['tcp', 'udp']);
const WITH_DOMAINS = new Set(['http', 'https', 'tcpmux']);
const WITH_SECRET = new Set(['stcp', 'sudp', 'xtcp']);

/** Keys the form edits itself, and what the list adds that is not in the file. */
const FORM_KEYS = ['name', 'type', 'localIP', 'localPort', 'remotePort', 'customDomains', 'subdomain', 'secretKey'];
const LISTED_ONLY = ['enabled', 'status', 'err', 'remoteAddr', 'statusSince'];

/** Every other key of a listed proxy (transport, plugin, healthCheck, ...), as the "more keys" JSON shows them. */
function otherKeys(proxy: Proxy | null): Record<string, unknown> {
  if (!proxy) return {};
  return Object.fromEntries(Object.entries(proxy).filter(([k]) => !FORM_KEYS.includes(k) && !LISTED_ONLY.includes(k)));
}

const text = (value: unknown): string => (typeof value === 'string' || typeof value === 'number' ? String(value) : '');

/** Adds a proxy to an instance, or edits one (a rename goes as oldName/newName). */
export function ProxyDialog(props: {
  instanceID: number;
  proxy: Proxy | null;
  onClose: () => void;
  onSaved: (message: string) => void;
}) {
  const original = props.proxy;
  const [name, setName] = useState(original?.name ?? '');
  const [type, setType] = useState(original?.type ?? 'tcp');
  const [localIP, setLocalIP] = useState(original ? text(original.localIP) : '127.0.0.1');
  const [localPort, setLocalPort] = useState(text(original?.localPort));
  const [remotePort, setRemotePort] = useState(text(original?.remotePort));
  const [domains, setDomains] = useState(
    Array.isArray(original?.customDomains) ? (original.customDomains as string[]).join(', ') : '',
  );
  const [subdomain, setSubdomain] = useState(text(original?.subdomain));
  const [secretKey, setSecretKey] = useState(text(original?.secretKey));
  const [enabled, setEnabled] = useState(true);
  const initialOther = otherKeys(original);
  const [more, setMore] = useState(Object.keys(initialOther).length ? JSON.stringify(initialOther, null, 2) : '');
  const [touched, setTouched] = useState(false);

  let moreValue: Record<string, unknown> = {};
  let moreProblem: string | undefined;
  if (more.trim()) {
    try {
      const parsed: unknown = JSON.parse(more);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) moreProblem = 'A JSON object.';
      else moreValue = parsed as Record<string, unknown>;
    } catch {
      moreProblem = 'Not valid JSON.';
    }
  }
  const domainList = domains
    .split(/[\s,]+/)
    .map((d) => d.trim())
    .filter(Boolean);
  const problems: Record<string, string | undefined> = {
    name: !name.trim() ? 'A name is required.' : /\s/.test(name) ? 'No spaces.' : undefined,
    localPort:
      original?.localPort === '' && !localPort
        ? undefined
        : portProblem(localPort, { required: !('plugin' in moreValue) }),
    remotePort: WITH_REMOTE_PORT.has(type) ? portProblem(remotePort, { required: false, min: 0 }) : undefined,
    domains:
      WITH_DOMAINS.has(type) && domainList.length === 0 && !subdomain.trim()
        ? `A ${type} proxy needs a custom domain or a subdomain.`
        : undefined,
    more: moreProblem,
  };
  const invalid = Object.values(problems).some(Boolean);
  const shown = (key: string) => (touched ? problems[key] : undefined);

  const submit = async () => {
    setTouched(true);
    if (invalid) throw new Error('Correct the fields marked above.');
    const info: Record<string, unknown> = { type };
    // A key emptied in an edit is removed (null); in a new proxy it is left out.
    const put = (key: string, value: unknown, present: boolean) => {
      if (present) info[key] = value;
      else if (original && original[key] !== undefined && original[key] !== '') info[key] = null;
    };
    put('localIP', localIP.trim(), Boolean(localIP.trim()));
    put('localPort', localPort, Boolean(localPort));
    put('remotePort', remotePort, WITH_REMOTE_PORT.has(type) && Boolean(remotePort));
    put('customDomains', domainList, WITH_DOMAINS.has(type) && domainList.length > 0);
    put('subdomain', subdomain.trim(), WITH_DOMAINS.has(type) && Boolean(subdomain.trim()));
    put('secretKey', secretKey, WITH_SECRET.has(type) && Boolean(secretKey));
    for (const key of Object.keys(initialOther)) if (!(key in moreValue)) info[key] = null;
    Object.assign(info, moreValue);

    let reply;
    if (!original) {
      reply = await post('/tunnelAct/proxyMgr/create', {
        instanceID: props.instanceID,
        proxyInfo: { name: name.trim(), ...info, ...(enabled ? {} : { enabled: false }) },
      });
    } else if (name.trim() !== original.name) {
      reply = await post('/tunnelAct/proxyMgr/modify', {
        instanceID: props.instanceID,
        oldName: original.name,
        newName: name.trim(),
        proxyInfo: info,
      });
    } else {
      reply = await post('/tunnelAct/proxyMgr/modify', {
        instanceID: props.instanceID,
        proxyInfo: { name: original.name, ...info },
      });
    }
    props.onSaved(reply.message);
  };

  return (
    <FormDialog
      title={original ? `Edit proxy ${original.name}` : 'Add a proxy'}
      submitLabel={original ? 'Save proxy' : 'Add proxy'}
      onClose={props.onClose}
      onSubmit={submit}
      invalid={touched && invalid}
      wide
    >
      <div class="row">
        <Field label="Proxy name" error={shown('name')} class="grow">
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
        <Field label="Type">
          {({ id }) => (
            <select id={id} value={type} onChange={(e) => setType(e.currentTarget.value)}>
              {TYPES.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <div class="row">
        <Field label="Local IP" class="grow">
          {({ id }) => <input id={id} value={localIP} onInput={(e) => setLocalIP(e.currentTarget.value)} />}
        </Field>
        <Field label="Local port" error={shown('localPort')}>
          {({ id, describedBy, invalid }) => (
            <input
              id={id}
              value={localPort}
              inputMode="numeric"
              size={6}
              aria-describedby={describedBy}
              aria-invalid={invalid}
              onInput={(e) => setLocalPort(e.currentTarget.value.trim())}
            />
          )}
        </Field>
        {WITH_REMOTE_PORT.has(type) && (
          <Field label="Remote port" error={shown('remotePort')} hint="0 or empty: the server picks">
            {({ id, describedBy, invalid }) => (
              <input
                id={id}
                value={remotePort}
                inputMode="numeric"
                size={6}
                aria-describedby={describedBy}
                aria-invalid={invalid}
                onInput={(e) => setRemotePort(e.currentTarget.value.trim())}
              />
            )}
          </Field>
        )}
      </div>
      {WITH_DOMAINS.has(type) && (
        <div class="row">
          <Field label="Custom domains" error={shown('domains')} class="grow" hint="Separated by commas">
            {({ id, describedBy, invalid }) => (
              <input
                id={id}
                value={domains}
                placeholder="www.example.com"
                aria-describedby={describedBy}
                aria-invalid={invalid}
                onInput={(e) => setDomains(e.currentTarget.value)}
              />
            )}
          </Field>
          <Field label="Subdomain">
            {({ id }) => <input id={id} value={subdomain} onInput={(e) => setSubdomain(e.currentTarget.value)} />}
          </Field>
        </div>
      )}
      {WITH_SECRET.has(type) && (
        <Field label="Secret key" hint="Shown as ******** when stored; leave it to keep it">
          {({ id, describedBy }) => (
            <input
              id={id}
              type="password"
              autocomplete="off"
              value={secretKey}
              aria-describedby={describedBy}
              onInput={(e) => setSecretKey(e.currentTarget.value)}
            />
          )}
        </Field>
      )}
      <Field
        label="More keys (JSON)"
        error={shown('more')}
        hint={'Any other key frpc takes for this type, nested or dotted, e.g. {"transport.useEncryption": true}'}
      >
        {({ id, describedBy, invalid }) => (
          <textarea
            id={id}
            rows={3}
            class="mono"
            value={more}
            spellcheck={false}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setMore(e.currentTarget.value)}
          />
        )}
      </Field>
      {!original && <Check label="Enabled" checked={enabled} onChange={setEnabled} />}
    </FormDialog>
  );
}
