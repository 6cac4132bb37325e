/**
 * "Does the text contain any of these strings?" in time linear in the text, whatever the
 * strings (CONTAINS, CONTAINS_ANY_OF and their negations on STRING data fields).
 *
 * `String.prototype.includes` is fast on ordinary input but not bounded: a 65,536-character
 * contextual attribute of `a`s searched for `a…ab a…a` (2,001 characters) took 84 ms, and for
 * 6,000 short items (`v0` … `v5999`) in a text of `v`s 18 s, all of it on the event loop.
 * Small texts and short lists keep using `includes`; beyond a budget of work, an Aho–Corasick
 * automaton (built once per compiled rule, on first need) reads each character of the text once.
 */

/** text length × total pattern length below which `includes` is used: at most ~3 ms even in its worst case */
const NATIVE_BUDGET = 1 << 16;

export function containsAnyMatcher(patterns: readonly string[]): (text: string) => boolean {
  if (patterns.some((p) => p.length === 0)) return () => true; // '' is in every string
  const total = patterns.reduce((n, p) => n + p.length, 0);
  let automaton: ((text: string) => boolean) | undefined;
  return (text) => {
    if (text.length * total <= NATIVE_BUDGET) {
      for (const p of patterns) if (text.includes(p)) return true;
      return false;
    }
    automaton ??= buildAutomaton(patterns);
    return automaton(text);
  };
}

/** Aho–Corasick over UTF-16 code units (the units `includes` compares). */
function buildAutomaton(patterns: readonly string[]): (text: string) => boolean {
  const next: Map<number, number>[] = [new Map()];
  const terminal: boolean[] = [false];
  for (const p of patterns) {
    let s = 0;
    for (let i = 0; i < p.length; i++) {
      const c = p.charCodeAt(i);
      let t = next[s].get(c);
      if (t === undefined) {
        t = next.length;
        next.push(new Map());
        terminal.push(false);
        next[s].set(c, t);
      }
      s = t;
    }
    terminal[s] = true;
  }
  const fail = new Int32Array(next.length);
  const queue: number[] = [];
  for (const child of next[0].values()) queue.push(child); // fail 0
  for (let head = 0; head < queue.length; head++) {
    const u = queue[head];
    for (const [c, v] of next[u]) {
      let f = fail[u];
      while (f !== 0 && !next[f].has(c)) f = fail[f];
      const to = next[f].get(c);
      fail[v] = to !== undefined && to !== v ? to : 0;
      if (terminal[fail[v]]) terminal[v] = true;
      queue.push(v);
    }
  }
  return (text) => {
    let s = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      let t = next[s].get(c);
      while (t === undefined && s !== 0) {
        s = fail[s];
        t = next[s].get(c);
      }
      s = t ?? 0;
      if (terminal[s]) return true;
    }
    return false;
  };
}
