/**
 * A text cut to `max` characters keeps its head and its end: a failed start's reason (its last log lines) comes
 * last, after a head of varying length (a file's path). The middle says how much it left out.
 */
export function clipMiddle(text: string, max: number): string {
  if (text.length <= max) return text;
  // The count's own digits take room from what is kept: counted again until it holds.
  let gap = '';
  for (;;) {
    const next = ` … (${text.length - (max - gap.length)} characters left out) … `;
    if (next === gap) break;
    gap = next;
  }
  const head = Math.floor((max - gap.length) / 3);
  return text.slice(0, head) + gap + text.slice(text.length - (max - gap.length - head));
}
