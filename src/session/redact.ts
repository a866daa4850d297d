/**
 * Secret redaction and text sanitising for anything this package copies into a session or a manifest.
 *
 * Invariants:
 * - Redaction only removes: it never adds text other than the `[REDACTED:<kind>]` marker.
 * - Sanitising keeps newlines and tabs and drops every other control character (including
 *   terminal escape sequences), so pasted text cannot drive a terminal that renders it.
 */

interface SecretPattern {
  kind: string;
  pattern: RegExp;
  /** Which capture group holds the secret; 0 means the whole match. */
  group: number;
}

const SECRET_PATTERNS: readonly SecretPattern[] = [
  {
    kind: "private-key",
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g,
    group: 0,
  },
  { kind: "anthropic-key", pattern: /\bsk-ant-[A-Za-z0-9_-]{16,}/g, group: 0 },
  { kind: "openai-key", pattern: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, group: 0 },
  { kind: "github-token", pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g, group: 0 },
  { kind: "aws-access-key", pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, group: 0 },
  { kind: "slack-token", pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/g, group: 0 },
  { kind: "google-api-key", pattern: /\bAIza[0-9A-Za-z_-]{35}/g, group: 0 },
  { kind: "jwt", pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, group: 0 },
  { kind: "bearer-token", pattern: /\b[Bb]earer\s+([A-Za-z0-9._~+/=-]{16,})/g, group: 1 },
  {
    kind: "credential",
    pattern:
      /\b(?:[A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|credential)[A-Za-z0-9_]*)["']?\s*[:=]\s*["']?([^\s"'`]{8,})/gi,
    group: 1,
  },
  { kind: "url-password", pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]{3,})@/gi, group: 1 },
];

export interface RedactionResult {
  text: string;
  /** How many secrets were replaced, by kind. */
  redacted: Record<string, number>;
}

export function redactSecrets(input: string): RedactionResult {
  const redacted: Record<string, number> = {};
  let text = input;
  for (const { kind, pattern, group } of SECRET_PATTERNS) {
    text = text.replace(pattern, (match: string, ...rest: unknown[]) => {
      const captured = group === 0 ? match : rest[group - 1];
      if (typeof captured !== "string" || captured.length === 0 || captured.startsWith("[REDACTED:")) return match;
      redacted[kind] = (redacted[kind] ?? 0) + 1;
      return match.replace(captured, `[REDACTED:${kind}]`);
    });
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
