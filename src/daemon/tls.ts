import { readFile } from 'node:fs/promises';

export interface TlsPaths {
  cert: string;
  key: string;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
}

/**
 * Reads a certificate and its key, and checks that they make a usable pair before anything is served with them:
 * a renewal that left a half-written or mismatched pair must not replace the one that works.
 */
export async function readTlsMaterial(paths: TlsPaths): Promise<TlsMaterial> {
  const read = async (what: string, path: string) => {
    try {
      return await readFile(path);
    } catch (err) {
      throw new Error(
        `cannot read the TLS ${what} ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
        { cause: err },
      );
    }
  };
  const material = { cert: await read('certificate', paths.cert), key: await read('key', paths.key) };
  const { createSecureContext } = await import('node:tls');
  try {
    createSecureContext(material);
  } catch (err) {
    // OpenSSL's reason only (e.g. "key values mismatch"): never the key's bytes.
    const reason = String((err as { reason?: string }).reason ?? (err as Error).message).split('\n')[0];
    throw new Error(`the TLS certificate ${paths.cert} and key ${paths.key} cannot be used: ${reason}`, { cause: err });
  }
  return material;
}

/** The certificate files to serve with: flags and environment win over the settings; undefined for plain HTTP. */
export function tlsPaths(
  flags: { tlsCert?: string; tlsKey?: string },
  env: NodeJS.ProcessEnv,
  settings: { 'TLS.CertFile': string; 'TLS.KeyFile': string },
): TlsPaths | undefined {
  const cert = flags.tlsCert ?? (env.TUNNELWARD_TLS_CERT || settings['TLS.CertFile']);
  const key = flags.tlsKey ?? (env.TUNNELWARD_TLS_KEY || settings['TLS.KeyFile']);
  if (!cert && !key) return undefined;
  if (!cert || !key)
    throw new Error(
      'TLS needs both a certificate and a key (TLS.CertFile and TLS.KeyFile, or --tls-cert and --tls-key)',
    );
  return { cert, key };
}
