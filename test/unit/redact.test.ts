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
    for (const secret of ["abcdefghijklmnop1234567890", "supersecretvalue123", "hunter2pass", "b3BlbnNzaC1rZXktdjEAAAAA"]) {
      expect(text).not.toContain(secret);
    }
  });

  it("leaves ordinary text alone", () => {
    const text = "Refactor the token parser; the password field is optional. See sk-learn docs.";
    expect(redactSecrets(text)).toEqual({ text, redacted: {} });
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
