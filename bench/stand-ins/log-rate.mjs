#!/usr/bin/env node
// A tunnel-client stand-in that writes frpc-style lines at a steady rate, each carrying its sequence number and
// the time it was written, so that a client of the log stream can measure delivery and latency.
import { readFileSync, writeSync } from 'node:fs';

const args = process.argv.slice(2);
if (args[0] !== '-c' || !args[1]) {
  process.stderr.write('usage: log-rate.mjs -c <config file>\n');
  process.exit(1);
}
// The rate comes from the config file (`metadatas.rate`): tunnelward gives tunnels a clean environment.
const rate = Number(/rate\s*=\s*"(\d+)"/.exec(readFileSync(args[1], 'utf8'))?.[1] ?? 10000);
const tickMs = 10;
let seq = 0;
const pad = (n, w = 2) => String(n).padStart(w, '0');
const stamp = (d) =>
  `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
const started = Date.now();
setInterval(() => {
  // Catch up to where the rate says we should be, in one write.
  const due = Math.floor(((Date.now() - started) / 1000) * rate);
  let text = '';
  const now = new Date();
  while (seq < due) text += `${stamp(now)} [I] [bench/rate.go:1] line ${++seq} at ${now.getTime()}\n`;
  if (text) writeSync(1, text);
}, tickMs);
