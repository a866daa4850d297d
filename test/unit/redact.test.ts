import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { boundText, redactSecrets, sanitizeText } from "../../src/session/redact.ts";
import { buildHandoffMessage, MAX_HANDOFF_CONTENT_CHARS, MAX_TASK_CHARS } from "../../src/session/handoff-message.ts";

const secrets: Array<[string, string]> = [
  ["openai-key", "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"],
  ["anthropic-key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"],
  ["github-token", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
  ["aws-access-key", "AKIAIOSFODNN7EXAMPLE"],
  ["slack-token", "xoxb-1234567890-abcdefghij"],
  ["jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"],
];

describe("redactSecrets", () => {
  it.each(secrets)("replaces a %s with a marker and nothing of the secret remains", (kind, secret) => {
    const { text, redacted } = redactSecrets(`use ${secret} please`);
    expect(text).toBe(`use [REDACTED:${kind}] please`);
    expect(redacted[kind]).toBe(1);
  });

  it("redacts bearer tokens, credential assignments, URL passwords and private key blocks", () => {
    const input = [
      "Authorization: Bearer abcdefghijklmnop1234567890",
      "API_KEY=supersecretvalue123",
      "db: postgres://admin:hunter2pass@db.local/app",
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
      "keep this line",
    ].join("\n");
    const { text } = redactSecrets(input);
    expect(text).toBe(
      [
        "Authorization: Bearer [REDACTED:bearer-token]",
        "API_KEY=[REDACTED:credential]",
        "db: postgres://admin:[REDACTED:url-password]@db.local/app",
        "[REDACTED:private-key]",
        "keep this line",
      ].join("\n"),
    );
    for (const secret of [
      "abcdefghijklmnop1234567890",
      "supersecretvalue123",
      "hunter2pass",
      "b3BlbnNzaC1rZXktdjEAAAAA",
    ]) {
      expect(text).not.toContain(secret);
    }
  });

  it("leaves ordinary text alone", () => {
    const text = "Refactor the token parser; the password field is optional. See sk-learn docs.";
    expect(redactSecrets(text)).toEqual({ text, redacted: {} });
  });
});

/**
 * The regular expressions redaction used to run (quadratic on some inputs), as the oracle of what
 * it must find; each secret is replaced where it is (the old code replaced the first equal text in
 * the match, so `ftp://pass:pass@` lost its user instead of its password).
 */
const ORACLE: ReadonlyArray<[string, RegExp, number]> = [
  [
    "private-key",
    /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/dg,
    0,
  ],
  ["anthropic-key", /\bsk-ant-[A-Za-z0-9_-]{16,}/dg, 0],
  ["openai-key", /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/dg, 0],
  ["github-token", /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/dg, 0],
  ["aws-access-key", /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/dg, 0],
  ["slack-token", /\bxox[abposr]-[A-Za-z0-9-]{10,}/dg, 0],
  ["google-api-key", /\bAIza[0-9A-Za-z_-]{35}/dg, 0],
  ["jwt", /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/dg, 0],
  ["bearer-token", /\b[Bb]earer\s+([A-Za-z0-9._~+/=-]{16,})/dg, 1],
  [
    "credential",
    /\b(?:[A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d|credential)[A-Za-z0-9_]*)["']?\s*[:=]\s*["']?([^\s"'`]{8,})/dgi,
    1,
  ],
  ["url-password", /\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:([^\s@/]{3,})@/dgi, 1],
];

function oracle(input: string): { text: string; redacted: Record<string, number> } {
  const redacted: Record<string, number> = {};
  let text = input;
  for (const [kind, pattern, group] of ORACLE) {
    let out = "";
    let copied = 0;
    for (const match of text.matchAll(pattern)) {
      const range = match.indices?.[group];
      if (range === undefined || range[1] <= range[0] || text.startsWith("[REDACTED:", range[0])) continue;
      out += `${text.slice(copied, range[0])}[REDACTED:${kind}]`;
      copied = range[1];
      redacted[kind] = (redacted[kind] ?? 0) + 1;
    }
    text = out + text.slice(copied);
  }
  return { text, redacted };
}

describe("redactSecrets in linear time", () => {
  const FRAGMENTS = [
    "a",
    "A",
    "0",
    ".",
    ":",
    "/",
    "@",
    " ",
    "\t",
    "\n",
    "-",
    "_",
    "=",
    '"',
    "'",
    "`",
    "+",
    "token",
    "secret",
    "api",
    "key",
    "Api-Key",
    "passwd",
    "password",
    "credential",
    "eyJ",
    "aaaaaaaa",
    "bbbbbbbbbbbbbbbbbbbb",
    "http",
    "://",
    "ftp://u:",
    "pass",
    "Bearer ",
    "sk-",
    "sk-ant-",
    "ghp_",
    "xoxb-",
    "AKIA",
    "[REDACTED:jwt]",
    "-----BEGIN ",
    "PRIVATE KEY",
    "-----",
    "-----END ",
    "eyJhbGciOi.",
    "cccccccc.",
    "http://u:pw@",
    "x-api-key",
  ];
  const texts = fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 40 }).map((parts) => parts.join(""));

  it("finds exactly what the old expressions found, on any mix of their parts", () => {
    fc.assert(
      fc.property(texts, (text) => {
        expect(redactSecrets(text)).toEqual(oracle(text));
      }),
      { numRuns: 3000 },
    );
  });

  // Each hand-written scanner on near-misses of its own shape, where matches are common.
  const noise = fc.array(fc.constantFrom("a", ".", ":", "/", "@", " ", "-", "_", "=", "'", "eyJ"), { maxLength: 3 });
  const repeated = (shape: fc.Arbitrary<string>): fc.Arbitrary<string> =>
    fc.array(fc.tuple(noise, shape), { minLength: 1, maxLength: 3 }).map((parts) => parts.flat(2).join(""));
  const pick = (...options: string[]): fc.Arbitrary<string> => fc.constantFrom(...options);
  const SHAPES: Record<string, fc.Arbitrary<string>> = {
    "URL passwords": repeated(
      fc
        .tuple(
          pick("http", "a.b", "_x", "9a", "a+b", "", "[REDACTED:x]"),
          pick("://", ":/", "://"),
          pick("u", "", "u:v", "u@", "u/"),
          pick(":", ""),
          pick("pw", "pw1", "p/w", "p:w:x", "p w", "", "[REDACTED:x]"),
          pick("@", "", "/"),
        )
        .map((parts) => parts.join("")),
    ),
    "JSON web tokens": repeated(
      fc
        .tuple(
          pick("eyJ", "xeyJ", " eyJ", "-eyJ"),
          pick("aaaaaaaa", "aaaa", "aaaaaaaaa-_", "", "eyJaaaaaaaa"),
          pick(".", ""),
          pick("aaaaaaaa", "aaaa", "a.eyJ", "bbbbbbbbbbb"),
          pick(".", "", ".."),
          pick("aaaaaaaa", "aaaa", "cccccccccccc", "eyJ"),
        )
        .map((parts) => parts.join("")),
    ),
    credentials: repeated(
      fc
        .tuple(
          pick("my", "", "x-", "_"),
          pick("token", "api-key", "api_key", "Secret", "passwd", "keyring", "api-", "key"),
          pick("", "_x", "s", "-key"),
          pick("", '"', "'", " "),
          pick("=", ":", " = ", "\t:", ""),
          pick("", " ", '"', "'"),
          pick("aaaaaaaa", "aaaa", "a=b:c=d:eeee", "[REDACTED:x]aaaa", "aaaaaaaa`b"),
        )
        .map((parts) => parts.join("")),
    ),
  };
  it.each(Object.keys(SHAPES))("finds exactly what the old expression found for %s", (name) => {
    const shape = SHAPES[name];
    if (shape === undefined) throw new Error(name);
    let found = 0;
    const numRuns = 3000;
    fc.assert(
      fc.property(shape, (text) => {
        const result = redactSecrets(text);
        expect(result).toEqual(oracle(text));
        if (Object.keys(result.redacted).length > 0) found += 1;
      }),
      { numRuns },
    );
    // The shapes do make matches (a property that never found anything would prove nothing). The
    // rarest shape matches about 3.3% of its texts; 1% keeps that proof without a random run
    // landing below the bar (CI once saw 97 of 3000).
    expect(found).toBeGreaterThan(numRuns / 100);
  });

  it.each([
    ["a.a.a...", "a.".repeat(32_768), {}],
    ["tokentoken...", "token".repeat(13_000), {}],
    ["eyJ-eyJ-...", "eyJ-".repeat(16_384), {}],
    ["a://b:a://b:...", "a://b:".repeat(10_000), {}],
  ] as const)("redacts inputs that took seconds before (%s, 64 K characters) the same way", (_name, text, redacted) => {
    expect(redactSecrets(text)).toEqual({ text, redacted });
  });

  it("replaces the password of a URL whose user is the same text, not the user", () => {
    expect(redactSecrets("ftp://pass:pass@host/").text).toBe("ftp://pass:[REDACTED:url-password]@host/");
    expect(redactSecrets("password=password").text).toBe("password=[REDACTED:credential]");
  });
});

describe("sanitizeText and boundText", () => {
  it("drops escape sequences and control characters, keeps newlines and tabs", () => {
    expect(sanitizeText("a\u001b[31mred\u001b[0m\tb\r\nc\u0007d\u0000e\u001b]0;title\u0007f")).toBe("ared\tb\ncdef");
  });

  it("bounds text without splitting a surrogate pair", () => {
    expect(boundText("ab😀cd", 3)).toEqual({ text: "ab", omittedChars: 4 });
    expect(boundText("short", 10)).toEqual({ text: "short", omittedChars: 0 });
  });
});

describe("buildHandoffMessage", () => {
  const base = {
    handoffId: "20261130-120000-feat-x-abcd",
    manifestPath: "/agent/handoff-worktree/manifests/20261130-120000-feat-x-abcd.json",
    branch: "feat/x",
    baseRef: "main",
    baseSha: "a".repeat(40),
    worktreePath: "/repos/app.worktrees/feat-x",
    mainCheckout: "/repos/app",
    parentSessionFile: "/agent/sessions/--repos-app--/s.jsonl",
  };

  it("names the branch, base SHA, worktree and parent, and says to wait without a task", () => {
    const message = buildHandoffMessage(base);
    expect(message.customType).toBe("handoff-worktree");
    expect(message.content).toContain("- Branch: feat/x (new, created from main at " + "a".repeat(40) + ")");
    expect(message.content).toContain("- Worktree: /repos/app.worktrees/feat-x");
    expect(message.content).toContain("- Parent session: /agent/sessions/--repos-app--/s.jsonl");
    expect(message.content).toContain("wait for the user's next message");
    expect(message.details).toMatchObject({ handoffId: base.handoffId, hasTask: false, taskOmittedChars: 0 });
  });

  it("bounds a 1 MB task, redacts its secrets and strips its control characters", () => {
    const task = `deploy with ghp_abcdefghijklmnopqrstuvwxyz0123456789 \u001b[2J now ` + "x".repeat(1024 * 1024);
    const message = buildHandoffMessage({ ...base, task });
    expect(message.content.length).toBeLessThanOrEqual(MAX_HANDOFF_CONTENT_CHARS);
    expect(message.content).toContain("deploy with [REDACTED:github-token]  now x");
    expect(message.content).not.toContain("\u001b");
    expect(message.details.hasTask).toBe(true);
    expect(message.details.redactions).toEqual({ "github-token": 1 });
    expect(message.details.taskOmittedChars).toBeGreaterThan(1024 * 1024 - MAX_TASK_CHARS - 100);
    expect(message.content).toMatch(/\[The task was cut here: \d+ more characters were not included\.\]$/);
  });
});
