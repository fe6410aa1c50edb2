/**
 * What an unknown name was most likely meant to be: a known one in another case, or one edit away (two in a last
 * part of six letters or more): `remotPort` -> `remotePort`, `Watchdog.Enable` -> `Watchdog.Enabled`.
 */
export function closestName<T extends string>(name: string, known: Iterable<T>): T | undefined {
  const wanted = name.toLowerCase();
  // A short last part (`x`, `nope`) is one edit from too much: only a slip in a longer word is a suggestion.
  const last = wanted.slice(wanted.lastIndexOf('.') + 1);
  const allowed = Math.min(2, Math.max(1, Math.floor(last.length / 3)));
  let best: T | undefined;
  let bestDistance = allowed + 1;
  for (const candidate of known) {
    const distance = editDistance(wanted, candidate.toLowerCase(), bestDistance);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** `Watchdog.Enable (did you mean Watchdog.Enabled?), Mystery`: unknown names, each with the one it was likely meant as. */
export function withSuggestions(names: readonly string[], known: Iterable<string>): string {
  const candidates = [...known];
  return names
    .map((name) => {
      const near = closestName(name, candidates);
      return near ? `${name} (did you mean ${near}?)` : name;
    })
    .join(', ');
}

/** Levenshtein distance, or `limit` as soon as it is known to be at least that. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    if (Math.min(...row) >= limit) return limit;
    previous = row;
  }
  return Math.min(previous[b.length]!, limit);
}
