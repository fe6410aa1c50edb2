import { createInterface } from 'node:readline';
import { forTerminal } from './render.js';

/** Asks for one line; on a terminal with `hidden`, what is typed is not echoed. */
export function ask(prompt: string, hidden = false): Promise<string> {
  const input = process.stdin;
  // The question can hold a name given on the command line or in the environment.
  const question = forTerminal(prompt);
  if (!input.isTTY || !hidden) {
    // A pipe: the first line is the answer (`echo "$PASS" | tunnelward login`).
    return new Promise((resolve, reject) => {
      const rl = createInterface({ input, output: input.isTTY ? process.stderr : undefined, terminal: false });
      if (input.isTTY) process.stderr.write(question);
      let answered = false;
      rl.once('line', (line) => {
        answered = true;
        rl.close();
        resolve(line);
      });
      rl.once('close', () => (answered ? undefined : reject(new Error('no answer given on standard input'))));
    });
  }
  return new Promise((resolve, reject) => {
    process.stderr.write(question);
    input.setRawMode(true);
    input.resume();
    input.setEncoding('utf8');
    let typed = '';
    const done = (finish: () => void) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      finish();
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n') return done(() => resolve(typed));
        if (char === '\u0003') return done(() => reject(new Error('cancelled')));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else if (char >= ' ') typed += char;
      }
    };
    input.on('data', onData);
  });
}
