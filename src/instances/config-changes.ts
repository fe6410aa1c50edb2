import type { ProxyInput, ProxyView, TunnelConfig } from '../config/tunnel-config.js';

/**
 * The changes an operator makes to an instance's config file, each as the change pipeline runs it: its kind, what
 * was asked as a revision records it (names and keys: never a value, which may be a secret), and the edit that makes
 * the new file from a copy of the current one (the copy is the edit's to change), by tunnelward's own checks (a 400,
 * 404 or 409 when it cannot be made).
 */
export interface FileChange<T> {
  kind: string;
  request: Record<string, unknown>;
  edit(draft: TunnelConfig): { config: TunnelConfig; result: T; notes?: string[] };
  /** A proxy it renames: what it keeps on the record by name (its expiry) goes with it. */
  renamed?: { from: string; to: string };
}

const keysOf = (fields: Record<string, unknown>) => Object.keys(fields).sort();

export const addProxy = (input: ProxyInput & Record<string, unknown>): FileChange<ProxyView> => ({
  kind: 'proxy.create',
  request: { proxy: input.name, keys: keysOf(input) },
  edit: (draft) => ({ config: draft, result: draft.addProxy(input) }),
});

export const modifyProxy = (
  selector: string,
  input: ProxyInput & Record<string, unknown>,
  newName?: string,
): FileChange<ProxyView> => ({
  kind: newName !== undefined && newName !== selector ? 'proxy.rename' : 'proxy.modify',
  request: { proxy: selector, ...(newName !== undefined ? { newName } : {}), keys: keysOf(input) },
  edit: (draft) => ({ config: draft, result: draft.modifyProxy(selector, input, newName) }),
  ...(newName !== undefined && newName !== selector ? { renamed: { from: selector, to: newName } } : {}),
});

export const deleteProxy = (name: string): FileChange<void> => ({
  kind: 'proxy.delete',
  request: { proxy: name },
  edit: (draft) => ({ config: draft, result: draft.deleteProxy(name) }),
});

export const setProxyEnabled = (name: string, enabled: boolean): FileChange<ProxyView> => ({
  kind: enabled ? 'proxy.enable' : 'proxy.disable',
  request: { proxy: name },
  edit: (draft) => ({ config: draft, result: draft.setProxyEnabled(name, enabled) }),
});

/** Top-level keys (the API's `configFile` modification, the CLI's `set`); null removes one. */
export const setSettings = (patch: Record<string, unknown>): FileChange<void> => ({
  kind: 'config.set',
  request: { keys: keysOf(patch) },
  edit: (draft) => ({ config: draft, result: draft.setCommon(patch) }),
});

/** The whole file replaced by an operator's text (an export, edited). */
export const replaceFile = (content: string, kind = 'config.replace'): FileChange<void> => ({
  kind,
  request: {},
  edit: (draft) => {
    const { config, notes } = draft.replacedBy(content);
    return { config, result: undefined, notes };
  },
});

/** The file put back as revision `number` had it (a new revision, checked and applied like any change). */
export const rollbackTo = (number: number, text: string): FileChange<void> => ({
  ...replaceFile(text, 'rollback'),
  request: { to: number },
});

/**
 * The file made as a desired state has it (`tunnelward apply`): the whole text replaced as an edit replaces it, the
 * clientID defaulted as a create defaults it, and a file that reads the same (key order and layout aside, the admin
 * endpoint kept) left exactly as it is, so that an apply of what is already there changes nothing.
 */
export const convergeTo = (content: string, client: { host: string; instance: string }): FileChange<void> => ({
  kind: 'apply',
  request: {},
  edit: (draft) => {
    const { config, notes } = draft.replacedBy(content);
    config.nameClient(client.host, client.instance);
    if (config.sameDocumentAs(draft)) return { config: draft, result: undefined };
    return { config, result: undefined, notes };
  },
});
