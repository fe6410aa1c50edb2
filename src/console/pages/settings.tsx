import { useEffect, useMemo, useState } from 'preact/hooks';
import { apiUrl, explain, get, post } from '../api';
import { ErrorText, Field, useSession, useTitle } from '../ui';

/** The part of a JSON Schema the settings use (from GET /openapi.json, components.schemas.Settings). */
interface Schema {
  type?: string | string[];
  description?: string;
  enum?: string[];
  const?: unknown;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  oneOf?: Schema[];
}

/** What the secret values of Webhook.Headers look like; sent back as it is, it keeps the stored value. */
const MASK = '********';

type Kind = 'boolean' | 'integer' | 'number' | 'string' | 'choice' | 'auto' | 'list' | 'headers' | 'json';

function kindOf(schema: Schema | undefined, value: unknown): Kind {
  if (schema?.oneOf) return 'auto';
  if (schema?.enum) return 'choice';
  const type = Array.isArray(schema?.type) ? schema?.type[0] : schema?.type;
  if (type === 'boolean' || typeof value === 'boolean') return 'boolean';
  if (type === 'integer') return 'integer';
  if (type === 'number' || typeof value === 'number') return 'number';
  if (type === 'array' || Array.isArray(value)) return 'list';
  // Names to strings (the headers); names to anything else is edited as JSON.
  const values = schema?.additionalProperties;
  if (type === 'object' && typeof values === 'object' && values.type === 'string') return 'headers';
  if (type === 'object' || (value !== null && typeof value === 'object')) return 'json';
  return 'string';
}

interface HeaderRow {
  name: string;
  value: string;
}

/** A setting as the form holds it: text for what is typed, rows for the headers. */
type Draft = boolean | string | HeaderRow[];

function toDraft(kind: Kind, value: unknown): Draft {
  switch (kind) {
    case 'boolean':
      return Boolean(value);
    case 'auto':
      return String(value);
    case 'list':
      return (Array.isArray(value) ? value : []).map(String).join('\n');
    case 'headers':
      return Object.entries((value ?? {}) as Record<string, string>).map(([name, v]) => ({ name, value: v }));
    case 'json':
      return value && Object.keys(value).length > 0 ? JSON.stringify(value, null, 2) : '';
    default:
      return value === null || value === undefined ? '' : String(value);
  }
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const PRINTABLE = /^[\x20-\x7e]*$/;

function range(schema: Schema | undefined): string {
  const { minimum: min, maximum: max } = schema ?? {};
  if (min !== undefined && max !== undefined) return ` from ${min} to ${max}`;
  if (min !== undefined) return ` of at least ${min}`;
  if (max !== undefined) return ` of at most ${max}`;
  return '';
}

function numberFrom(text: string, schema: Schema | undefined, integer: boolean): { value?: number; error?: string } {
  const trimmed = text.trim();
  const what = integer ? 'A whole number' : 'A number';
  if (trimmed === '' || !(integer ? /^-?\d+$/ : /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/).test(trimmed)) {
    return { error: `${what}${range(schema)}.` };
  }
  const value = Number(trimmed);
  if (
    (schema?.minimum !== undefined && value < schema.minimum) ||
    (schema?.maximum !== undefined && value > schema.maximum)
  ) {
    return { error: `${what}${range(schema)}.` };
  }
  return { value };
}

/** The value to send for a draft, or why it cannot be one: the form checks each type before the daemon does. */
function parse(kind: Kind, draft: Draft, schema: Schema | undefined): { value?: unknown; error?: string } {
  switch (kind) {
    case 'boolean':
      return { value: draft };
    case 'auto':
      return { value: draft === 'auto' ? 'auto' : draft === 'true' };
    case 'integer':
    case 'number':
      return numberFrom(draft as string, schema, kind === 'integer');
    case 'list': {
      const items = (draft as string)
        .split(/[\n,]+/)
        .map((s) => s.trim())
        .filter(Boolean);
      const itemType = schema?.items?.type;
      if (itemType === 'integer') {
        const values: number[] = [];
        for (const item of items) {
          const n = numberFrom(item, schema?.items, true);
          if (n.error) return { error: `Each entry: ${n.error.toLowerCase()}` };
          values.push(n.value!);
        }
        return { value: values };
      }
      return { value: items };
    }
    case 'headers': {
      const value: Record<string, string> = {};
      for (const row of draft as HeaderRow[]) {
        const name = row.name.trim();
        if (!name && !row.value) continue;
        if (!HEADER_NAME.test(name)) return { error: `"${name}" is not a header name.` };
        if (!PRINTABLE.test(row.value)) return { error: `The value of ${name} must be printable ASCII.` };
        if (name in value) return { error: `${name} is given twice.` };
        value[name] = row.value;
      }
      return { value };
    }
    case 'json': {
      const text = (draft as string).trim();
      if (!text) return { value: {} };
      try {
        const value: unknown = JSON.parse(text);
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: 'A JSON object.' };
        return { value };
      } catch {
        return { error: 'Not valid JSON.' };
      }
    }
    default: {
      const text = draft as string;
      if (schema?.pattern && !new RegExp(schema.pattern).test(text))
        return { error: `Does not match ${schema.pattern}.` };
      if (/[\x00-\x1f\x7f]/.test(text)) return { error: 'No control characters.' };
      return { value: text };
    }
  }
}

let cachedSchemas: Promise<Record<string, Schema>> | undefined;

/** The settings' schemas from the API's own description (public, fetched once per page load). */
function settingSchemas(): Promise<Record<string, Schema>> {
  cachedSchemas ??= fetch(apiUrl('/openapi.json'), { credentials: 'omit' })
    .then((res) => res.json())
    .then((doc: { components?: { schemas?: { Settings?: { properties?: Record<string, Schema> } } } }) => {
      return doc.components?.schemas?.Settings?.properties ?? {};
    })
    .catch(() => {
      cachedSchemas = undefined;
      return {};
    });
  return cachedSchemas;
}

const groupOf = (key: string) => (key.includes('.') ? key.slice(0, key.indexOf('.')) : 'General');

export function SettingsPage() {
  useTitle('Settings');
  const { notify } = useSession();
  const [values, setValues] = useState<Record<string, unknown> | null>(null);
  const [schemas, setSchemas] = useState<Record<string, Schema>>({});
  const [drafts, setDrafts] = useState<Record<string, Draft>>({});
  const [serverError, setServerError] = useState<{ key?: string; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [loadError, setLoadError] = useState('');

  const load = async () => {
    try {
      const [reply, found] = await Promise.all([get<Record<string, unknown>>('/settings/get'), settingSchemas()]);
      setSchemas(found);
      setValues(reply.data);
      setDrafts(Object.fromEntries(Object.entries(reply.data).map(([k, v]) => [k, toDraft(kindOf(found[k], v), v)])));
      setLoadError('');
    } catch (err) {
      setLoadError(explain(err));
    }
  };
  useEffect(() => {
    void load();
  }, []);

  const fields = useMemo(() => {
    if (!values) return [];
    return Object.keys(values).map((key) => {
      const schema = schemas[key];
      const kind = kindOf(schema, values[key]);
      const draft = drafts[key] ?? toDraft(kind, values[key]);
      const parsed = parse(kind, draft, schema);
      const changed = !parsed.error && JSON.stringify(parsed.value) !== JSON.stringify(values[key]);
      return { key, schema, kind, draft, parsed, changed };
    });
  }, [values, schemas, drafts]);

  const groups = useMemo(() => {
    const map = new Map<string, typeof fields>();
    for (const field of fields) {
      const group = groupOf(field.key);
      map.set(group, [...(map.get(group) ?? []), field]);
    }
    return [...map.entries()];
  }, [fields]);

  const changed = fields.filter((f) => f.changed);
  const invalid = fields.filter((f) => f.parsed.error);

  const save = async (e: Event) => {
    e.preventDefault();
    if (busy || changed.length === 0 || invalid.length > 0) return;
    setBusy(true);
    setServerError(null);
    try {
      const reply = await post(
        '/settings/set?strict=true',
        Object.fromEntries(changed.map((f) => [f.key, f.parsed.value])),
      );
      notify(reply.message);
      await load();
    } catch (err) {
      const text = explain(err);
      // The daemon names the key it refuses: show the message at that field too.
      const key = fields.find((f) => text.includes(f.key))?.key;
      setServerError({ key, text });
    } finally {
      setBusy(false);
    }
  };

  const setDraft = (key: string, draft: Draft) => setDrafts((d) => ({ ...d, [key]: draft }));

  return (
    <section class="page" aria-labelledby="settings-title">
      <div class="page-head">
        <h1 id="settings-title">Settings</h1>
      </div>
      <ErrorText>{loadError}</ErrorText>
      {!values && !loadError && <p class="muted">Loading…</p>}
      {values && (
        <form class="settings" onSubmit={save} noValidate>
          <div class="savebar" role="region" aria-label="Save settings">
            <span class="muted">
              {invalid.length > 0
                ? `${invalid.length} field${invalid.length === 1 ? '' : 's'} to correct`
                : changed.length > 0
                  ? `${changed.length} unsaved change${changed.length === 1 ? '' : 's'}: ${changed.map((f) => f.key).join(', ')}`
                  : 'No unsaved changes'}
            </span>
            <span class="spacer" />
            <button
              type="button"
              disabled={busy || (changed.length === 0 && invalid.length === 0)}
              onClick={() => {
                setDrafts({});
                setServerError(null);
              }}
            >
              Discard changes
            </button>
            <button type="submit" class="primary" disabled={busy || changed.length === 0 || invalid.length > 0}>
              {busy ? 'Saving…' : 'Save settings'}
            </button>
          </div>
          {serverError && !serverError.key && <ErrorText>{serverError.text}</ErrorText>}
          {groups.map(([group, list]) => (
            <fieldset key={group} class="group">
              <legend>{group}</legend>
              <div class="group-fields">
                {list.map((f) => (
                  <SettingField
                    key={f.key}
                    name={f.key}
                    kind={f.kind}
                    schema={f.schema}
                    draft={f.draft}
                    changed={f.changed}
                    error={f.parsed.error ?? (serverError?.key === f.key ? serverError.text : undefined)}
                    onChange={(d) => setDraft(f.key, d)}
                  />
                ))}
              </div>
            </fieldset>
          ))}
        </form>
      )}
    </section>
  );
}

function SettingField(props: {
  name: string;
  kind: Kind;
  schema: Schema | undefined;
  draft: Draft;
  changed: boolean;
  error: string | undefined;
  onChange: (draft: Draft) => void;
}) {
  const { name, kind, schema, draft, onChange } = props;
  const label = props.changed ? `${name} (changed)` : name;
  const hint = schema?.description;
  if (kind === 'headers') return <HeadersField {...props} label={label} />;
  return (
    <Field label={label} hint={hint} error={props.error} class={kind === 'json' || kind === 'list' ? 'span' : ''}>
      {({ id, describedBy, invalid }) => {
        const common = { id, 'aria-describedby': describedBy, 'aria-invalid': invalid };
        switch (kind) {
          case 'boolean':
            return (
              <select {...common} value={String(draft)} onChange={(e) => onChange(e.currentTarget.value === 'true')}>
                <option value="true">true</option>
                <option value="false">false</option>
              </select>
            );
          case 'auto':
            return (
              <select {...common} value={draft as string} onChange={(e) => onChange(e.currentTarget.value)}>
                <option value="auto">auto</option>
                <option value="true">true</option>
                <option value="false">false</option>
              </select>
            );
          case 'choice':
            return (
              <select {...common} value={draft as string} onChange={(e) => onChange(e.currentTarget.value)}>
                {(schema?.enum ?? []).map((option) => (
                  <option key={option} value={option}>
                    {option}
                  </option>
                ))}
              </select>
            );
          case 'list':
          case 'json':
            return (
              <textarea
                {...common}
                class="mono"
                rows={kind === 'json' ? 4 : 2}
                spellcheck={false}
                placeholder={kind === 'list' ? 'one per line' : '{}'}
                value={draft as string}
                onInput={(e) => onChange(e.currentTarget.value)}
              />
            );
          default:
            return (
              <input
                {...common}
                value={draft as string}
                inputMode={kind === 'integer' ? 'numeric' : kind === 'number' ? 'decimal' : undefined}
                spellcheck={false}
                onInput={(e) => onChange(e.currentTarget.value)}
              />
            );
        }
      }}
    </Field>
  );
}

/** Webhook.Headers: name and value rows; stored values come masked and are kept when the mask is sent back. */
function HeadersField(props: {
  name: string;
  label: string;
  draft: Draft;
  error: string | undefined;
  schema: Schema | undefined;
  onChange: (draft: Draft) => void;
}) {
  const rows = props.draft as HeaderRow[];
  const update = (index: number, row: HeaderRow) => props.onChange(rows.map((r, i) => (i === index ? row : r)));
  return (
    <fieldset class={`field span headers ${props.error ? 'invalid' : ''}`}>
      <legend>{props.label}</legend>
      {rows.length === 0 && <p class="muted">No headers.</p>}
      {rows.map((row, index) => (
        <div class="header-row" key={index}>
          <input
            aria-label={`Header ${index + 1} name`}
            value={row.name}
            placeholder="Name"
            spellcheck={false}
            onInput={(e) => update(index, { ...row, name: e.currentTarget.value })}
          />
          <input
            aria-label={`Header ${index + 1} value`}
            type="password"
            autocomplete="off"
            value={row.value}
            placeholder="Value"
            onInput={(e) => update(index, { ...row, value: e.currentTarget.value })}
          />
          <button
            type="button"
            class="small"
            aria-label={`Remove header ${row.name || index + 1}`}
            onClick={() => props.onChange(rows.filter((_, i) => i !== index))}
          >
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="small" onClick={() => props.onChange([...rows, { name: '', value: '' }])}>
        Add header
      </button>
      <small class="hint">
        Values are secret: stored ones are shown as {MASK} and kept as they are unless you type a new one.
      </small>
      {props.error && <small class="field-error">{props.error}</small>}
    </fieldset>
  );
}
