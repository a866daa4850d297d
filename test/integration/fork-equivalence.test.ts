/**
 * The child session the fork writes straight from the parent file is the one Pi's own
 * SessionManager writes (`open` + `createBranchedSession` + `appendCustomMessageEntry`), entry for
 * entry, on sessions built by Pi with everything its branching rules touch: labels set, set again,
 * cleared and set on abandoned entries, label entries inside the path (Pi re-chains around them),
 * a compaction that keeps from a label, a root whose parent is gone, non-canonical and malformed
 * lines. Only what is fresh on every write differs: the header's id and time, the new label and
 * message ids, the message's time.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { LEAN_WRITER_SESSION_VERSION } from "../../src/session/active-path.ts";
import { ForkError, forkActiveBranch } from "../../src/session/fork.ts";
import { buildHandoffMessage, type HandoffMessage } from "../../src/session/handoff-message.ts";

const host = { SessionManager, CURRENT_SESSION_VERSION };

function user(text: string) {
  return { role: "user" as const, content: [{ type: "text" as const, text }], timestamp: 1 };
}

function assistant(text: string) {
  return {
    role: "assistant" as const,
    content: [{ type: "text" as const, text }],
    api: "faux",
    provider: "faux",
    model: "faux-1",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop" as const,
    timestamp: 2,
  };
}

type Entry = Record<string, unknown>;

/** The entries of a session file as Pi's loader reads them (blank and malformed lines skipped). */
function readEntries(file: string): Entry[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .flatMap((line) => {
      try {
        return line.trim().length > 0 ? [JSON.parse(line) as Entry] : [];
      } catch {
        return [];
      }
    });
}

/**
 * The entries with what is fresh on every write replaced by stable names: the header's id and
 * time, and every id not in the parent (new labels, the message) by its order of appearance.
 */
function normalized(entries: Entry[], parentIds: ReadonlySet<string>): Entry[] {
  const fresh = new Map<string, string>();
  const name = (id: unknown): unknown => {
    if (typeof id !== "string" || parentIds.has(id)) return id;
    if (!fresh.has(id)) fresh.set(id, `new-${fresh.size}`);
    return fresh.get(id);
  };
  return entries.map((entry) => {
    if (entry.type === "session") return { ...entry, id: "header", timestamp: "time" };
    const out: Entry = { ...entry, id: name(entry.id), parentId: name(entry.parentId) };
    if (entry.type === "custom_message") out.timestamp = "time";
    return out;
  });
}

describe("the fork writes the child Pi's SessionManager writes", () => {
  let dir: string;
  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "fork-equivalence-")));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function message(parentFile: string): HandoffMessage {
    return buildHandoffMessage({
      handoffId: "20261202-000000-feat-abcd",
      manifestPath: join(dir, "m.json"),
      branch: "feat",
      baseRef: "main",
      baseSha: "c".repeat(40),
      worktreePath: join(dir, "wt"),
      mainCheckout: join(dir, "repo"),
      parentSessionFile: parentFile,
      task: "carry on \u001b[31m with ü and \u2028",
    });
  }

  /** Pi's own fork of `parentFile` at `leafId`, on a copy (Pi's open may write what it opens). */
  function piFork(parentFile: string, leafId: string, handoff: HandoffMessage): Entry[] {
    const copy = join(dir, "pi-copy.jsonl");
    copyFileSync(parentFile, copy);
    const manager = SessionManager.open(copy, join(dir, "pi-child"), join(dir, "wt"));
    const file = manager.createBranchedSession(leafId);
    manager.appendCustomMessageEntry(handoff.customType, handoff.content, true, handoff.details);
    const entries = readEntries(file ?? "");
    const header = entries[0] ?? {};
    header.parentSession = parentFile;
    return entries;
  }

  async function ours(parentFile: string, leafId: string, handoff: HandoffMessage) {
    const before = readFileSync(parentFile);
    const result = await forkActiveBranch(
      {
        parentSessionFile: parentFile,
        leafId,
        childCwd: join(dir, "wt"),
        childSessionDir: join(dir, "child"),
        message: handoff,
      },
      host,
    );
    expect(readFileSync(parentFile)).toEqual(before);
    expect(readdirSync(join(dir, "child"))).toEqual([result.childSessionFile.slice(join(dir, "child").length + 1)]);
    return { result, entries: readEntries(result.childSessionFile) };
  }

  function parentIdsOf(file: string): Set<string> {
    return new Set(readEntries(file).flatMap((entry) => (typeof entry.id === "string" ? [entry.id] : [])));
  }

  async function expectSameAsPi(parentFile: string, leafId: string) {
    const handoff = message(parentFile);
    const { result, entries } = await ours(parentFile, leafId, handoff);
    const ids = parentIdsOf(parentFile);
    ids.delete(String(readEntries(parentFile)[0]?.id));
    expect(normalized(entries, ids)).toEqual(normalized(piFork(parentFile, leafId, handoff), ids));
    const header = entries[0] ?? {};
    expect(header).toMatchObject({ type: "session", version: CURRENT_SESSION_VERSION, id: result.childSessionId });
    expect(result.childSessionFile).toBe(
      join(dir, "child", `${String(header.timestamp).replace(/[:.]/g, "-")}_${result.childSessionId}.jsonl`),
    );
    expect(String(header.id)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // Pi opens what was written and sees the same conversation as on its own fork.
    const reopened = SessionManager.open(result.childSessionFile, join(dir, "reopen"));
    expect(reopened.buildSessionContext().messages.at(-1)).toMatchObject({
      role: "custom",
      customType: handoff.customType,
    });
    return entries;
  }

  it("is checked against the session format of the Pi installed: a Pi that bumps it fails here until the rules are checked again", () => {
    expect(CURRENT_SESSION_VERSION).toBe(LEAN_WRITER_SESSION_VERSION);
  });

  it("labels set, set again, cleared and abandoned; a label entry inside the path; a compaction keeping from a label", async () => {
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    const first = manager.appendMessage(user("first"));
    const answer = manager.appendMessage(assistant("answer one"));
    manager.appendModelChange("faux", "faux-2");
    manager.appendThinkingLevelChange("high");
    const abandoned = manager.appendMessage(user("abandoned"));
    manager.appendLabelChange(abandoned, "dead end");
    manager.branch(answer);
    manager.appendLabelChange(first, "start");
    const labelInPath = manager.appendLabelChange(answer, "checkpoint");
    const afterLabel = manager.appendMessage(user("after the label"));
    manager.appendLabelChange(afterLabel, "later");
    // Set again, a label keeps its place in Pi's order (before "later"); cleared, it leaves it.
    manager.appendLabelChange(first, "start again");
    manager.appendLabelChange(answer, "");
    manager.appendCompaction("summary", labelInPath, 1234);
    manager.appendCustomEntry("some-extension", { n: 1, text: "é\u0000" });
    const leaf = manager.appendMessage(assistant('quotes " and \\ and \n and </script>'));
    const parentFile = manager.getSessionFile() ?? "";

    const entries = await expectSameAsPi(parentFile, leaf);
    expect(entries.filter((entry) => entry.type === "label").map((entry) => [entry.targetId, entry.label])).toEqual([
      [first, "start again"],
      [afterLabel, "later"],
    ]);
    expect(entries.map((entry) => entry.id)).not.toContain(abandoned);
  });

  it("a root whose parent is gone, a line not in Pi's shape, a malformed line and a blank one", async () => {
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    manager.appendMessage(user("first"));
    manager.appendMessage(assistant("answer"));
    const leaf = manager.appendMessage(user("last"));
    const parentFile = manager.getSessionFile() ?? "";
    const lines = readFileSync(parentFile, "utf8").split("\n");
    const root = JSON.parse(lines[1] ?? "{}") as Entry;
    lines[1] = JSON.stringify({ ...root, parentId: "0000gone" });
    const second = JSON.parse(lines[2] ?? "{}") as Entry;
    lines[2] = `  ${JSON.stringify({ message: second.message, timestamp: second.timestamp, parentId: second.parentId, id: second.id, type: "message" })}`;
    lines.splice(3, 0, "{not json", "");
    writeFileSync(parentFile, lines.join("\n"));

    const entries = await expectSameAsPi(parentFile, leaf);
    expect(entries[1]).toMatchObject({ id: root.id, parentId: null });
  });

  it("a compaction not re-chained keeping from a label replaced before it, one keeping from itself, a label as the leaf", async () => {
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    const first = manager.appendMessage(user("first"));
    const label = manager.appendLabelChange(first, "mark");
    const answer = manager.appendMessage(assistant("after the mark"));
    // Its parent is a message, so Pi keeps its parent; its kept-from label was replaced by `answer`.
    manager.appendCompaction("summary", label, 10);
    const self = manager.appendMessage(user("more"));
    manager.appendCompaction("again", self, 20);
    manager.appendMessage(assistant("last answer"));
    const leaf = manager.appendLabelChange(answer, "the leaf is a label");
    const parentFile = manager.getSessionFile() ?? "";

    const entries = await expectSameAsPi(parentFile, leaf);
    expect(entries.find((entry) => entry.type === "compaction")).toMatchObject({ firstKeptEntryId: answer });
  });

  it("CRLF lines, an entry without parentId, a label without id that clears, a line cut off mid-write", async () => {
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    const first = manager.appendMessage(user("first"));
    manager.appendLabelChange(first, "to be cleared");
    manager.appendMessage(assistant("answer"));
    const leaf = manager.appendMessage(user("last"));
    const parentFile = manager.getSessionFile() ?? "";
    const lines = readFileSync(parentFile, "utf8")
      .split("\n")
      .filter((line) => line.length > 0);
    const answerLine = JSON.parse(lines[3] ?? "{}") as Entry;
    const { parentId: _dropped, ...withoutParent } = answerLine;
    lines[3] = JSON.stringify(withoutParent);
    lines.splice(4, 0, JSON.stringify({ type: "label", targetId: first, label: "" }));
    // A write cut off mid-line that repeats the leaf's id: its start looks like the leaf, Pi skips it.
    const cut = { type: "message", id: leaf, parentId: answerLine.id, timestamp: "t", message: user("cut") };
    lines.push(JSON.stringify(cut).slice(0, 150));
    writeFileSync(parentFile, `${lines.join("\r\n")}\r\n`);

    const entries = await expectSameAsPi(parentFile, leaf);
    expect(entries.filter((entry) => entry.type === "label")).toEqual([]);
    expect(JSON.stringify(entries)).not.toContain('"cut"');
  });

  it("a path with no user or assistant message writes nothing, as Pi writes nothing", async () => {
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    manager.appendMessage(user("kept for the file to exist"));
    manager.branch(manager.appendModelChange("faux", "faux-2"));
    manager.resetLeaf();
    const leaf = manager.appendThinkingLevelChange("low");
    const parentFile = manager.getSessionFile() ?? "";
    await expect(
      forkActiveBranch(
        {
          parentSessionFile: parentFile,
          leafId: leaf,
          childCwd: join(dir, "wt"),
          childSessionDir: join(dir, "child"),
          message: message(parentFile),
        },
        host,
      ),
    ).rejects.toThrow(new ForkError("The active branch has no messages yet, so there is nothing to hand off."));
    expect(() => readdirSync(join(dir, "child"))).toThrow();
  });
});
