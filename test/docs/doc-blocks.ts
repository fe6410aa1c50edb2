/**
 * The commands the docs show, as the doc test runs them (test/docs/doc-commands.test.ts).
 *
 * A ```console block is run: each `$ ` line is a command (continued on the next lines while it ends with `\`, or up
 * to the end of a here-document), and the lines after it, up to the next command, are what it prints. Those are
 * checked loosely: each must be found, in order, among the lines printed (standard output and error together), where
 * `...` stands for any text and a run of spaces for any run of spaces; a line of `...` alone checks nothing.
 * A command ending in `&` runs in the background until the file is done.
 *
 * Marks, in an HTML comment on the line before a block (not shown where Markdown is rendered):
 * - `<!-- doctest: skip REASON -->`: the block is not run (the test says so, with the reason);
 * - `<!-- doctest: retry -->`: each command is run again until it succeeds, for at most 30 s (a tunnel coming up);
 * - `<!-- doctest: exit N -->`: each command of the block exits with N instead of 0.
 * A command ending in the comment `# not run: REASON` is shown but not run. A ```sh, ```bash or ```shell block must be
 * a console block or be marked skip: every command the docs show is run, or says why not.
 *
 * Each file gets a daemon of its own (started as `npm start` starts it, from a temp dir that holds its `data/`), and
 * its commands run in that dir, in order, as in one shell (variables kept), logged in as `admin` as after the README's
 * first steps. The ports the docs name (7600 the daemon's, 7000, 6000, 8000) are free ports of the test's.
 * TUNNELWARD_DOCTEST_SHOW=1 logs what each command printed.
 */
export interface Command {
  /** 1-based line of its `$ `. */
  line: number;
  text: string;
  expected: string[];
  /** Why it is not run, when it is not. */
  notRun?: string;
  background: boolean;
}

export interface Block {
  line: number;
  lang: string;
  skip?: string;
  retry: boolean;
  exit: number;
  commands: Command[];
}

const SHELL_LANGS = new Set(['console', 'sh', 'bash', 'shell']);
const MARK = /^<!--\s*doctest:\s*(skip|retry|exit)\b\s*(.*?)\s*-->$/;
const NOT_RUN = /\s+#\s*not run:\s*(.+)$/;
const HEREDOC = /<<-?\s*'?"?([A-Za-z_]+)'?"?/;

/** Every shell block of a Markdown text, with its commands. */
export function shellBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(\S*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end]!)) end++;
    i = end;
    const lang = fence[1]!;
    if (!SHELL_LANGS.has(lang)) continue;
    const block: Block = { line: start + 1, lang, retry: false, exit: 0, commands: [] };
    // The marks: HTML comments on the lines right above the fence.
    for (let j = start - 1; j >= 0; j--) {
      const mark = MARK.exec(lines[j]!.trim());
      if (!mark) break;
      if (mark[1] === 'skip') block.skip = mark[2] || 'no reason given';
      else if (mark[1] === 'retry') block.retry = true;
      else block.exit = Number(mark[2]);
    }
    if (lang === 'console') block.commands = commandsOf(lines.slice(start + 1, end), start + 2);
    blocks.push(block);
  }
  return blocks;
}

function commandsOf(lines: string[], firstLine: number): Command[] {
  const commands: Command[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (!line.startsWith('$ ')) {
      commands.at(-1)?.expected.push(line);
      continue;
    }
    const at = i;
    let text = line.slice(2);
    const heredoc = HEREDOC.exec(text);
    if (heredoc) {
      while (i + 1 < lines.length && lines[i] !== heredoc[1]) text += '\n' + lines[++i];
    } else {
      while (text.endsWith('\\') && i + 1 < lines.length) text += '\n' + lines[++i];
    }
    const notRun = NOT_RUN.exec(text);
    const bare = text.replace(NOT_RUN, '');
    commands.push({
      line: firstLine + at,
      text: bare,
      expected: [],
      notRun: notRun?.[1],
      background: /[^&]&\s*$/.test(bare),
    });
  }
  return commands;
}

/** Whether `output` holds the expected lines in order, each as a loose pattern; the first line not found when not. */
export function missingLine(expected: string[], output: string): string | undefined {
  const printed = output.split('\n');
  let at = 0;
  for (const line of expected) {
    if (line.trim() === '' || line.trim() === '...') continue;
    const pattern = new RegExp(
      '^' +
        line
          .trim()
          .split('...')
          .map((part) =>
            part
              .split(/\s+/)
              .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
              .join('\\s+'),
          )
          .join('.*') +
        '$',
    );
    while (at < printed.length && !pattern.test(printed[at]!.trim())) at++;
    if (at === printed.length) return line;
    at++;
  }
  return undefined;
}
