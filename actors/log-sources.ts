import { closeSync, openSync, readSync, statSync, watch, type FSWatcher } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from '../src/log/logger.js';

/** Output of a tunnel that comes from somewhere other than tunnelward's own pipe. */
export interface LogSource {
  stop(): void;
}

export type LogSourceFactory = (id: number, onText: (text: string) => void) => LogSource;

/** init.d: follows the log file the init script writes, from its end; a truncated file is followed from its start. */
export function fileSource(pathOf: (id: number) => string, log: Logger): LogSourceFactory {
  return (id, onText) => {
    const path = pathOf(id);
    let offset = sizeOf(path);
    // One decoder for the file's whole life: a character the writer had half written is finished by the next read.
    let decoder = new StringDecoder('utf8');
    const readNew = () => {
      const size = sizeOf(path);
      if (size < offset) {
        offset = 0;
        decoder = new StringDecoder('utf8');
      }
      if (size === offset) return;
      let fd: number | undefined;
      try {
        fd = openSync(path, 'r');
        const buffer = Buffer.alloc(size - offset);
        readSync(fd, buffer, 0, buffer.length, offset);
        offset = size;
        const text = decoder.write(buffer);
        if (text !== '') onText(text);
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
