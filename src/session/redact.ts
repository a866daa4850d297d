/**
 * Secret redaction and text sanitising for anything this package copies into a session or a manifest.
 *
 * Invariants:
 * - Redaction only removes: it never adds text other than the `[REDACTED:<kind>]` marker, put
 *   exactly where the secret was (never over an earlier, equal piece of text such as a URL's user).
 * - Linear time on any input: every pattern is found by a scan that reads each character a bounded
 *   number of times (measured by `npm run bench`, section `redaction`).
 * - Sanitising keeps newlines and tabs and drops every other control character (including
 *   terminal escape sequences), so pasted text cannot drive a terminal that renders it.
 */

/**
 * A secret's kind, and how its occurrences are found: each finder returns, left to right and not
 * overlapping, where each match starts and ends and where the secret inside it is. Every finder
 * runs in time linear in the text (a regular expression here would backtrack quadratically on
 * `a.a.a...`, `tokentoken...` or `eyJ-eyJ-...`: seconds for 64 K characters, with Pi's event loop
 * blocked), so three are hand-written scanners with the same meaning as the expression beside them.
 */
interface SecretPattern {
  kind: string;
  find: (text: string) => Iterable<Found>;
}

interface Found {
  /** The secret's range (what is replaced). */
  start: number;
  end: number;
}

/** The matches of a regular expression that cannot backtrack badly; `group`: which capture is the secret (0: all). */
function byExpression(pattern: RegExp, group: number): (text: string) => Iterable<Found> {
  return function* (text) {
    const expression = new RegExp(pattern.source, `${pattern.flags.replace("d", "")}d`);
    for (const match of text.matchAll(expression)) {
      const range = match.indices?.[group];
      if (range !== undefined) yield { start: range[0], end: range[1] };
    }
  };
}

const WORD = /[A-Za-z0-9_]/;
const LETTER = /[A-Za-z]/;
const SPACE = /\s/;
const isWord = (text: string, at: number): boolean => at >= 0 && at < text.length && WORD.test(text[at] ?? "");
const isSpace = (character: string | undefined): boolean => character !== undefined && SPACE.test(character);

/** `\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]{3,})@` (case-insensitive): the password of a URL. */
function* urlPasswords(text: string): Iterable<Found> {
  const scheme = /[A-Za-z0-9+.-]/;
  let matchedUpTo = 0;
  for (let colon = text.indexOf("://"); colon !== -1; colon = text.indexOf("://", colon + 1)) {
    // The scheme: a letter at a word boundary, then scheme characters up to `://` (none before the last match's end).
    let runStart = colon;
    while (runStart > matchedUpTo && scheme.test(text[runStart - 1] ?? "")) runStart -= 1;
    let start = runStart;
    while (start < colon && !(LETTER.test(text[start] ?? "") && !isWord(text, start - 1))) start += 1;
    if (start === colon) continue;
    // Its user (stops at the first `:`, `/`, `@` or space) and password (at the first `@`, `/` or space).
    const userStart = colon + 3;
    let userEnd = userStart;
    while (userEnd < text.length && !/[\s:/@]/.test(text[userEnd] ?? "")) userEnd += 1;
    if (userEnd === userStart || text[userEnd] !== ":") continue;
    const passwordStart = userEnd + 1;
    let passwordEnd = passwordStart;
    while (passwordEnd < text.length && !/[\s@/]/.test(text[passwordEnd] ?? "")) passwordEnd += 1;
    if (passwordEnd - passwordStart < 3 || text[passwordEnd] !== "@") continue;
    yield { start: passwordStart, end: passwordEnd };
    matchedUpTo = passwordEnd + 1;
    colon = passwordEnd;
  }
}

/** `\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`: a JSON web token. */
function* jsonWebTokens(text: string): Iterable<Found> {
  const segment = /[A-Za-z0-9_-]/;
  const runEnd = (from: number): number => {
    let at = from;
    while (at < text.length && segment.test(text[at] ?? "")) at += 1;
    return at;
  };
  for (let start = text.indexOf("eyJ"); start !== -1; ) {
    if (isWord(text, start - 1)) {
      start = text.indexOf("eyJ", start + 1);
      continue;
    }
    // Three dot-separated runs; a failure at any of them fails every start inside what was read.
    const first = runEnd(start + 3);
    const second = text[first] === "." && first - (start + 3) >= 8 ? runEnd(first + 1) : -1;
    const third = second !== -1 && text[second] === "." && second - (first + 1) >= 8 ? runEnd(second + 1) : -1;
    if (third !== -1 && third - (second + 1) >= 8) {
      yield { start, end: third };
      start = text.indexOf("eyJ", third);
      continue;
    }
    start = text.indexOf("eyJ", Math.max(start + 1, Math.max(first, second, third)));
  }
}

/**
 * `\b(?:[A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|credential)[A-Za-z0-9_]*)["']?\s*[:=]\s*["']?([^\s"'\`]{8,})`
 * (case-insensitive): the value assigned to a name that says it is a secret. Found from each `:`
 * or `=`: the name is the word just before it (past spaces and a quote), the value the run after.
 */
function* credentials(text: string): Iterable<Found> {
  const secretName = /api[_-]?key|secret|token|passw(?:or)?d|credential/i;
  let matchedUpTo = 0;
  for (let at = 0; at < text.length; at += 1) {
    const character = text[at];
    if (character !== ":" && character !== "=") continue;
    let nameEnd = at;
    while (nameEnd > matchedUpTo && isSpace(text[nameEnd - 1])) nameEnd -= 1;
    if (text[nameEnd - 1] === '"' || text[nameEnd - 1] === "'") nameEnd -= 1;
    let nameStart = nameEnd;
    while (nameStart > matchedUpTo && isWord(text, nameStart - 1)) nameStart -= 1;
    let name = text.slice(nameStart, nameEnd);
    // `api-key`: the one name with a character that is not a word character in it.
    if (
      !secretName.test(name) &&
      /^key/i.test(name) &&
      text[nameStart - 1] === "-" &&
      /api$/i.test(text.slice(Math.max(matchedUpTo, nameStart - 4), nameStart - 1))
    ) {
      let before = nameStart - 1;
      while (before > matchedUpTo && isWord(text, before - 1)) before -= 1;
      name = text.slice(before, nameEnd);
    }
    if (name.length === 0 || !secretName.test(name)) continue;
    let valueStart = at + 1;
    while (valueStart < text.length && isSpace(text[valueStart])) valueStart += 1;
    if (text[valueStart] === '"' || text[valueStart] === "'") valueStart += 1;
    let valueEnd = valueStart;
    while (valueEnd < text.length && !/[\s"'`]/.test(text[valueEnd] ?? "")) valueEnd += 1;
    if (valueEnd - valueStart < 8) continue;
    yield { start: valueStart, end: valueEnd };
    matchedUpTo = valueEnd;
    at = valueEnd - 1;
  }
}

/** In the order they are applied; each sees the text the ones before it left. */
const SECRET_PATTERNS: readonly SecretPattern[] = [
  {
    kind: "private-key",
    find: byExpression(
      /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g,
      0,
    ),
  },
  { kind: "anthropic-key", find: byExpression(/\bsk-ant-[A-Za-z0-9_-]{16,}/g, 0) },
  { kind: "openai-key", find: byExpression(/\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, 0) },
  {
    kind: "github-token",
    find: byExpression(/\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, 0),
  },
  { kind: "aws-access-key", find: byExpression(/\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, 0) },
  { kind: "slack-token", find: byExpression(/\bxox[abposr]-[A-Za-z0-9-]{10,}/g, 0) },
  { kind: "google-api-key", find: byExpression(/\bAIza[0-9A-Za-z_-]{35}/g, 0) },
  { kind: "jwt", find: jsonWebTokens },
  { kind: "bearer-token", find: byExpression(/\b[Bb]earer\s+([A-Za-z0-9._~+/=-]{16,})/g, 1) },
  { kind: "credential", find: credentials },
  { kind: "url-password", find: urlPasswords },
];

export interface RedactionResult {
  text: string;
  /** How many secrets were replaced, by kind. */
  redacted: Record<string, number>;
}

const MARKER = "[REDACTED:";

export function redactSecrets(input: string): RedactionResult {
  const redacted: Record<string, number> = {};
  let text = input;
  for (const { kind, find } of SECRET_PATTERNS) {
    const parts: string[] = [];
    let copied = 0;
    for (const found of find(text)) {
      // A secret an earlier pattern already replaced stays its marker.
      if (found.end <= found.start || text.startsWith(MARKER, found.start)) continue;
      parts.push(text.slice(copied, found.start), `${MARKER}${kind}]`);
      copied = found.end;
      redacted[kind] = (redacted[kind] ?? 0) + 1;
    }
    if (parts.length > 0) text = parts.join("") + text.slice(copied);
  }
  return { text, redacted };
}

// ESC-introduced sequences (CSI, OSC, and two-byte escapes) first, then any remaining control character.
const ESCAPE_SEQUENCE = /\u001b(?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g;
const CONTROL_CHARACTER = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function sanitizeText(input: string): string {
  return input.replace(/\r\n?/g, "\n").replace(ESCAPE_SEQUENCE, "").replace(CONTROL_CHARACTER, "");
}

/** Cut `text` to at most `maxChars` characters, saying how much was left out. */
export function boundText(text: string, maxChars: number): { text: string; omittedChars: number } {
  if (text.length <= maxChars) return { text, omittedChars: 0 };
  // Do not cut a surrogate pair in half.
  let end = maxChars;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return { text: text.slice(0, end), omittedChars: text.length - end };
}
