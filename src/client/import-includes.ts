import { readdir, readFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { minimatch } from 'minimatch';
import { readConfigText } from '../config/import-formats.js';
import { getPath, text } from '../config/toml-tree.js';
import { CliError, EXIT } from './errors.js';

/** At most this many files are brought in by one import (the API takes as many). */
export const MAX_INCLUDED_FILES = 100;

/** A file an frpc config file's `includes` names, as the import sends it. */
export interface IncludedFile {
  path: string;
  content: string;
}

/**
 * The files the config file's `includes` name, read as frpc finds them: each entry is a directory and a pattern for
 * the names in it (Go's filepath.Match: `*`, `?`, `[...]`; no `**`, no directories). frpc takes a relative entry from
 * its working directory; the import takes it from the imported file's directory, where a conf.d layout keeps it.
 * None when the file has no `includes` (or cannot be read: the import says why).
 */
export async function readIncludes(file: string, content: string, format?: string): Promise<IncludedFile[]> {
  const read = await readConfigText(content, format).catch(() => undefined);
  const includes = read === undefined ? undefined : getPath(read.tree, ['includes']);
  if (!Array.isArray(includes)) return [];
  const found: IncludedFile[] = [];
  for (const entry of includes.map(text)) {
    const dir = resolve(dirname(file), dirname(entry));
    const names = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      throw new CliError(EXIT.failed, `includes: cannot read the directory ${dir}: ${err.code ?? err.message}`);
    });
    for (const name of names
      .filter((n) => n.isFile() || n.isSymbolicLink())
      .map((n) => n.name)
      .sort()) {
      if (!minimatch(name, basename(entry), { dot: true, nobrace: true, noext: true, noglobstar: true })) continue;
      const path = join(dir, name);
      if (found.some((f) => f.path === path)) continue;
      if (found.length === MAX_INCLUDED_FILES)
        throw new CliError(EXIT.failed, `includes: more than ${MAX_INCLUDED_FILES} files; import them in parts`);
      const included = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new CliError(EXIT.failed, `includes: cannot read ${path}: ${err.code ?? err.message}`);
      });
      found.push({ path, content: included });
    }
  }
  return found;
}
