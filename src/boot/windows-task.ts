// schtasks.exe argument arrays for a tunnel started at boot on Windows. Each array is passed to schtasks.exe
// as argv (execFile), never through cmd.exe, so cmd's metacharacters need no escaping; the values are still
// validated so that nothing odd reaches the task definition.
import { badRequest } from '../errors.js';
import { firstRefused, shown } from './names.js';

export interface CreateTaskOptions {
  taskName: string;
  runUser: string;
  tunnelPath: string;
  configPath: string;
}

/** schtasks refuses a /TR value longer than this. */
export const MAX_TASK_RUN_LENGTH = 261;

// Folders and a name, e.g. `tunnelward\tunnel_1`; no component made only of dots.
const TASK_NAME = /^\\?(?:[A-Za-z0-9_.-]{1,64}\\){0,3}[A-Za-z0-9_.-]{1,64}$/;
// Optional NetBIOS domain (`NT AUTHORITY` included), then a SAM account name of at most 20 characters
// (`SYSTEM`, `tunnel-svc`, a managed service account ending in `$`). No spaces or dots at either end.
const WINDOWS_USER =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9_. -]{0,13}[A-Za-z0-9_])?\\)?[A-Za-z0-9_](?:[A-Za-z0-9_. -]{0,18}[A-Za-z0-9_$])?$/;
// Drive-absolute (`C:\frp\frpc.exe`) or UNC (`\\server\share\...`).
const WINDOWS_ABSOLUTE = /^(?:[A-Za-z]:[\\/]|\\\\[^\\/]+[\\/][^\\/]+)/;
// `%` is expanded by Task Scheduler in actions; quotes would end our quoting; `&|<>^` and control characters
// have no place in a path and would be dangerous if the line ever reached cmd.exe; `*?` are never valid in a path.
const WINDOWS_PATH_CHAR = /^[^"%&|<>^*?\x00-\x1f\x7f]$/;

/** Quotes one argument so CommandLineToArgvW (and the MSVCRT startup code) gives it back unchanged. */
export function quoteWindowsArg(arg: string): string {
  if (arg !== '' && !/[ \t\n\v"]/.test(arg)) return arg;
  let out = '"';
  let backslashes = 0;
  for (const c of arg) {
    if (c === '\\') {
      backslashes++;
      continue;
    }
    // Backslashes are literal except before a quote: there they are doubled, plus one to escape the quote.
    out += c === '"' ? `${'\\'.repeat(backslashes * 2 + 1)}"` : `${'\\'.repeat(backslashes)}${c}`;
    backslashes = 0;
  }
  // Trailing backslashes precede our closing quote, so they are doubled too.
  return `${out}${'\\'.repeat(backslashes * 2)}"`;
}

/** Joins arguments into one Windows command line. */
export function windowsCommandLine(args: string[]): string {
  return args.map(quoteWindowsArg).join(' ');
}

export function checkTaskName(taskName: string): string {
  if (typeof taskName !== 'string' || !TASK_NAME.test(taskName) || /(?:^|\\)\.+(?:\\|$)/.test(taskName)) {
    throw badRequest(
      `taskName must be up to 4 backslash-separated parts of A-Z a-z 0-9 _ . - (1 to 64 each), got ${typeof taskName === 'string' ? shown(taskName) : typeof taskName}`,
    );
  }
  return taskName;
}

export function checkWindowsUser(user: string): string {
  if (typeof user !== 'string' || !WINDOWS_USER.test(user)) {
    throw badRequest(
      `runUser must be SYSTEM, a user name or DOMAIN\\user (letters, digits, _ . - and inner spaces; user at most 20 characters), got ${typeof user === 'string' ? shown(user) : typeof user}`,
    );
  }
  return user;
}

export function checkWindowsPath(field: string, path: string): string {
  if (typeof path !== 'string') throw badRequest(`${field} must be a string`);
  if (!WINDOWS_ABSOLUTE.test(path)) throw badRequest(`${field} must be an absolute Windows path, got ${shown(path)}`);
  if (path.length > 260) throw badRequest(`${field} must be at most 260 characters long`);
  const refused = firstRefused(path, WINDOWS_PATH_CHAR);
  if (refused)
    throw badRequest(`${field} must not contain quotes, %, & | < > ^ * ? or control characters (${refused})`);
  return path;
}

/** Creates (or replaces, /F) a task that runs the tunnel at system start with the highest privileges. */
export function createTaskArgs(options: CreateTaskOptions): string[] {
  const taskName = checkTaskName(options.taskName);
  const runUser = checkWindowsUser(options.runUser);
  const tunnelPath = checkWindowsPath('tunnelPath', options.tunnelPath);
  const configPath = checkWindowsPath('configPath', options.configPath);
  // One argument for /TR: schtasks splits it into program and arguments by the same quoting rules.
  const taskRun = windowsCommandLine([tunnelPath, '-c', configPath]);
  if (taskRun.length > MAX_TASK_RUN_LENGTH) {
    throw badRequest(
      `tunnelPath and configPath together are too long for a scheduled task (${taskRun.length} > ${MAX_TASK_RUN_LENGTH} characters)`,
    );
  }
  return ['/Create', '/SC', 'ONSTART', '/TN', taskName, '/TR', taskRun, '/RU', runUser, '/RL', 'HIGHEST', '/F'];
}

export function deleteTaskArgs(taskName: string): string[] {
  return ['/Delete', '/TN', checkTaskName(taskName), '/F'];
}

export function queryTaskArgs(taskName: string): string[] {
  return ['/Query', '/TN', checkTaskName(taskName)];
}
