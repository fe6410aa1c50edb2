import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useId, useRef, useState } from 'preact/hooks';
import { explain, type InstanceState, type Me } from './api';
import type { EventStream, LinkState } from './events';
import type { HealthMonitor } from './health';

// ---- The session every page works in ----

export type NoticeKind = 'ok' | 'error';

export interface SessionContext {
  me: Me;
  events: EventStream;
  /** The self-check as this tab knows it: admins only. */
  health: HealthMonitor | null;
  notify: (text: string, kind?: NoticeKind) => void;
}

export const Session = createContext<SessionContext | null>(null);

export function useSession(): SessionContext {
  const session = useContext(Session);
  if (!session) throw new Error('useSession outside a session');
  return session;
}

/** The event stream's state, for pages that poll while it is down. */
export function useLinkState(events: EventStream): LinkState {
  const [state, setState] = useState(events.state);
  useEffect(() => {
    setState(events.state);
    return events.onState(setState);
  }, [events]);
  return state;
}

/** Calls `load` every `intervalMs` while the event stream is down: the fallback, never the rule. */
export function usePollWhileDown(events: EventStream, load: () => unknown, intervalMs = 10_000): void {
  const state = useLinkState(events);
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    if (state !== 'down') return;
    const timer = window.setInterval(() => latest.current(), intervalMs);
    return () => window.clearInterval(timer);
  }, [state, intervalMs]);
}

/** The current time, re-read every `ms` (for uptimes that count on screen without asking the daemon). */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), ms);
    return () => window.clearInterval(timer);
  }, [ms]);
  return now;
}

export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} — tunnelward`;
  }, [title]);
}

// ---- Small pieces ----

/**
 * The state, and while it runs the tunnel's health when it is not up (amber: degraded or down), with the reason
 * as the badge's title.
 */
export function StateBadge({
  state,
  health,
}: {
  state: InstanceState | string;
  health?: { state: string; reason: string | null } | undefined;
}) {
  const warn = state === 'running' && health !== undefined && health.state !== 'up';
  return (
    <span class={`badge state-${state}${warn ? ` health-${health.state}` : ''}`} title={health?.reason ?? undefined}>
      {warn ? `${state} · ${health.state}` : state}
    </span>
  );
}

export function LinkIndicator({ events }: { events: EventStream }) {
  const state = useLinkState(events);
  const text = state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting…' : 'Reconnecting…';
  const title =
    state === 'live'
      ? 'Changes appear as they happen (event stream connected)'
      : 'The event stream is down: reading the list every 10 s until it is back';
  return (
    <span class={`link link-${state}`} title={title}>
      <span class="dot" aria-hidden="true" />
      {text}
    </span>
  );
}

export function ErrorText({ children }: { children: ComponentChildren }) {
  if (!children) return null;
  return (
    <p class="error-text" role="alert">
      {children}
    </p>
  );
}

/**
 * A labelled form field. The input comes from `children`, which receives the ids to use so the label, the hint
 * and the error are tied to it for assistive technology.
 */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  error?: string | undefined;
  class?: string;
  children: (ids: { id: string; describedBy: string | undefined; invalid: boolean }) => ComponentChildren;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [props.hint ? hintId : '', props.error ? errorId : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div class={`field ${props.class ?? ''} ${props.error ? 'invalid' : ''}`}>
      <label for={id}>{props.label}</label>
      {props.children({ id, describedBy, invalid: Boolean(props.error) })}
      {props.hint && (
        <small id={hintId} class="hint">
          {props.hint}
        </small>
      )}
      {props.error && (
        <small id={errorId} class="field-error">
          {props.error}
        </small>
      )}
    </div>
  );
}

/** A checkbox with its label after it. */
export function Check(props: {
  label: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
  hint?: string;
  disabled?: boolean;
}) {
  const id = useId();
  return (
    <div class="field check">
      <input
        id={id}
        type="checkbox"
        checked={props.checked}
        disabled={props.disabled}
        aria-describedby={props.hint ? `${id}-hint` : undefined}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
      <label for={id}>{props.label}</label>
      {props.hint && (
        <small id={`${id}-hint`} class="hint">
          {props.hint}
        </small>
      )}
    </div>
  );
}

/** A modal dialog (the browser's own: focus is kept inside, Escape closes it). */
export function Dialog(props: { title: string; onClose: () => void; children: ComponentChildren; wide?: boolean }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    // Where the keyboard was: it goes back there when the dialog closes (the button that opened it).
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    if (dialog && !dialog.open) dialog.showModal();
    return () => {
      if (dialog?.open) dialog.close();
      if (opener?.isConnected) opener.focus();
    };
  }, []);
  return (
    <dialog
      ref={ref}
      class={`dialog ${props.wide ? 'wide' : ''}`}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
    >
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
    </dialog>
  );
}

/** A form in a dialog: submit runs `onSubmit`; a failure is shown in the dialog, which stays open. */
export function FormDialog(props: {
  title: string;
  submitLabel: string;
  onSubmit: () => Promise<void>;
  onClose: () => void;
  invalid?: boolean;
  danger?: boolean;
  wide?: boolean;
  children: ComponentChildren;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  return (
    <Dialog title={props.title} onClose={props.onClose} wide={props.wide}>
      <form
        noValidate
        onSubmit={async (e) => {
          e.preventDefault();
          if (busy || props.invalid) return;
          setBusy(true);
          setError('');
          try {
            await props.onSubmit();
            props.onClose();
          } catch (err) {
            setError(explain(err));
            setBusy(false);
          }
        }}
      >
        {props.children}
        <ErrorText>{error}</ErrorText>
        <div class="actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class={props.danger ? 'danger' : 'primary'} disabled={busy || props.invalid}>
            {busy ? 'Working…' : props.submitLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** "Are you sure?", for what cannot be undone. */
export function Confirm(props: {
  title: string;
  confirmLabel: string;
  onConfirm: () => Promise<void>;
  onClose: () => void;
  children: ComponentChildren;
}) {
  return (
    <FormDialog
      title={props.title}
      submitLabel={props.confirmLabel}
      onSubmit={props.onConfirm}
      onClose={props.onClose}
      danger
    >
      <div class="confirm-text">{props.children}</div>
    </FormDialog>
  );
}

export function NotAllowed({ what }: { what: string }) {
  useTitle('Not available');
  return (
    <section class="page">
      <h1>Not available</h1>
      <p>{what} is not available to your role.</p>
      <p>
        <a href="#/instances">Back to the instances</a>
      </p>
    </section>
  );
}
