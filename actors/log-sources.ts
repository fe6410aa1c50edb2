import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync, statSync, watch, type FSWatcher } from 'node:fs';
import type { Logger } from '../src/log/logger.js';

/** Output of a tunnel that comes from somewhere other than tunnelward's own pipe. */
export interface LogSource {
  stop(): void;
}

export type LogSourceFactory = (id: number, onText: (text: string) => void) => LogSource;

/** systemd: follows the unit's journal (`journalctl -f -o json`), handing over each message as a line. */
export function journalSource(journalctl: () => string, log: Logger): LogSourceFactory {
  return (id, onText) => {
    const child = spawn(journalctl(), ['-f', '-n', '0', '-o', 'json', '-u', `tunnel_${id}.service`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let rest = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      const lines = (rest + chunk).split('\n');
      rest = lines.pop()!;
      let text = '';
      for (const line of lines) {
        try {
          const message = JSON.parse(line).MESSAGE;
          // journald stores a message that is not valid UTF-8 as an array of bytes.
          text += `${Array.isArray(message) ? Buffer.from(message).toString('utf8') : String(message ?? '')}\n`;
        } catch {
          // not a journal entry
        }
      }
      if (text) onText(text);
    });
    child.on('error', (err) => log.warn({ instanceID: id, err }, 'cannot follow the journal'));
    return { stop: () => child.kill() };
  };
}

/** init.d: follows the log file the init script writes, from its end; a truncated file is followed from its start. */
export function fileSource(pathOf: (id: number) => string, log: Logger): LogSourceFactory {
  return (id, onText) => {
    const path = pathOf(id);
    let offset = sizeOf(path);
    const readNew = () => {
      const size = sizeOf(path);
      if (size < offset) offset = 0;
      if (size === offset) return;
      let fd: number | undefined;
      try {
        fd = openSync(path, 'r');
        const buffer = Buffer.alloc(size - offset);
        readSync(fd, buffer, 0, buffer.length, offset);
        offset = size;
        onText(buffer.toString('utf8'));
      } catch (err) {
        log.warn({ instanceID: id, err }, 'cannot read the service log file');
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    };
    let watcher: FSWatcher | undefined;
    const poll = setInterval(readNew, 1000);
    poll.unref();
    try {
      watcher = watch(path, readNew);
    } catch {
      // not there yet: the poll picks it up
    }
    return {
      stop() {
        clearInterval(poll);
        watcher?.close();
      },
    };
  };
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}
