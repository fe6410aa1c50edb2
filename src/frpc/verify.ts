import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stripControls } from '../util/terminal-text.js';

/** What `frpc verify` said of a file: accepted, refused (its words), or not asked (why). */
export type Verdict = { verified: true } | { verified: false; refused: string } | { verified: false; skipped: string };

/** How long `frpc verify` may take (it reads one file: a few ms; a machine under load gets more). */
const VERIFY_TIMEOUT_MS = 15_000;
/** frpc's answer is cut to this: a verdict is one or two lines. */
const MAX_MESSAGE = 2000;

/**
 * Runs the real `frpc verify -c` on a copy of `text` in `scratchDir` (private to tunnelward), with the environment the
 * tunnel would have, so its `{{ .Envs.NAME }}` render as at a start. The copy's path never reaches the message.
 */
export async function verifyConfig(
  tunnelPath: string,
  text: string,
  env: Readonly<Record<string, string>>,
  scratchDir: string,
): Promise<Verdict> {
  await mkdir(scratchDir, { recursive: true, mode: 0o700 });
  const copy = join(scratchDir, `verify-${randomBytes(6).toString('hex')}.toml`);
  await writeFile(copy, text, { mode: 0o600 });
  try {
    const { code, output } = await run(tunnelPath, ['verify', '-c', copy], env);
    const said = stripControls(output).split(copy).join('the new file').trim().slice(0, MAX_MESSAGE);
    if (code === 0) return { verified: true };
    if (code === null) return { verified: false, skipped: `frpc verify did not finish: ${said}` };
    return { verified: false, refused: said || `frpc verify exited with code ${code}` };
  } finally {
    await rm(copy, { force: true });
  }
}

function run(
  program: string,
  args: string[],
  env: Readonly<Record<string, string>>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    execFile(
      program,
      args,
      {
        env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', ...env },
        timeout: VERIFY_TIMEOUT_MS,
        maxBuffer: 1 << 20,
      },
      (err, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (!err) return resolve({ code: 0, output });
        const failed = err as NodeJS.ErrnoException & { code?: number | string; killed?: boolean };
        if (typeof failed.code === 'number' && !failed.killed) return resolve({ code: failed.code, output });
        resolve({ code: null, output: failed.killed ? `no answer within ${VERIFY_TIMEOUT_MS} ms` : failed.message });
      },
    );
  });
}
