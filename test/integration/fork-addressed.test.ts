/**
 * Issue 41 point 12: a fork does not hand on the messages addressed to the parent alone (a child's
 * report, a landing's notice, a note; session/addressed-messages.ts). On both fork paths (the lean
 * writer, and Pi's SessionManager for a format the lean writer was not checked against) each
 * becomes a custom entry in its place, same id, parent and time, its message whole under `data`;
 * every other entry is as Pi writes it; Pi's own context of the child holds none of them.
 */
import { mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CURRENT_SESSION_VERSION, SessionManager } from "@earendil-works/pi-coding-agent";
import { NOTE_MESSAGE_TYPE } from "../../src/session/message-types.ts";
import { REPORT_MESSAGE_TYPE } from "../../src/session/message-types.ts";
import { forkActiveBranch } from "../../src/session/fork.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";

type Entry = Record<string, unknown>;

function entriesOf(file: string): Entry[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim().length > 0)
    .map((line) => JSON.parse(line) as Entry);
}

describe("a fork and the messages addressed to the parent alone", () => {
  let dir: string;
  beforeEach(() => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "fork-addressed-")));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A parent built by Pi: a question, a report, a landing notice, a note, a lineage message, a follow-up. */
  function parent(): { file: string; leafId: string } {
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "parent"));
    const user = (text: string) => ({
      role: "user" as const,
      content: [{ type: "text" as const, text }],
      timestamp: 1,
    });
    manager.appendMessage(user("first question"));
    manager.appendCustomMessageEntry(REPORT_MESSAGE_TYPE, "Report from handoff feat/a: did a", true, {
      kind: "report",
      reportId: "r1",
    });
    manager.appendCustomMessageEntry(REPORT_MESSAGE_TYPE, "Handoff feat/a was landed into main", true, {
      kind: "landed",
      reportId: "r2",
    });
    manager.appendCustomMessageEntry(NOTE_MESSAGE_TYPE, "Your base moved", true, { noteId: "n1" });
    manager.appendCustomMessageEntry("some-other-extension", "kept as a message", true, { x: 1 });
    const leafId = manager.appendMessage(user("second question"));
    const file = manager.getSessionFile();
    if (file === undefined) throw new Error("Pi wrote no parent file");
    return { file, leafId };
  }

  for (const [path, version] of [
    ["the lean writer", CURRENT_SESSION_VERSION],
    ["Pi's SessionManager", CURRENT_SESSION_VERSION + 1],
  ] as const) {
    it(`keeps each as a custom entry in its place, out of the child's context (${path})`, async () => {
      const { file, leafId } = parent();
      const before = readFileSync(file);
      const handoff = buildHandoffMessage({
        handoffId: "20261202-000000-feat-abcd",
        manifestPath: join(dir, "m.json"),
        branch: "feat/b",
        baseRef: "main",
        baseSha: "c".repeat(40),
        worktreePath: join(dir, "wt"),
        mainCheckout: join(dir, "repo"),
        parentSessionFile: file,
        task: "carry on",
      });
      const result = await forkActiveBranch(
        {
          parentSessionFile: file,
          leafId,
          childCwd: join(dir, "wt"),
          childSessionDir: join(dir, "child"),
          message: handoff,
        },
        { SessionManager, CURRENT_SESSION_VERSION: version },
      );
      expect(readFileSync(file)).toEqual(before);
      const parentEntries = entriesOf(file).slice(1);
      const child = entriesOf(result.childSessionFile).slice(1);
      // The path entry for entry, then the handoff message.
      expect(child.map((entry) => entry.id).slice(0, -1)).toEqual(parentEntries.map((entry) => entry.id));
      expect(child.map((entry) => [entry.type, entry.customType])).toEqual([
        ["message", undefined],
        ["custom", REPORT_MESSAGE_TYPE],
        ["custom", REPORT_MESSAGE_TYPE],
        ["custom", NOTE_MESSAGE_TYPE],
        ["custom_message", "some-other-extension"],
        ["message", undefined],
        ["custom_message", handoff.customType],
      ]);
      parentEntries.forEach((entry, index) => {
        const written = child[index] ?? {};
        if (entry.customType === REPORT_MESSAGE_TYPE || entry.customType === NOTE_MESSAGE_TYPE)
          expect(written).toEqual({
            type: "custom",
            customType: entry.customType,
            data: { content: entry.content, display: true, details: entry.details },
            id: entry.id,
            parentId: entry.parentId,
            timestamp: entry.timestamp,
          });
        else expect(written).toEqual(entry);
      });
      // What the child's model reads: none of the addressed messages.
      const context = SessionManager.open(result.childSessionFile, join(dir, "child")).buildSessionContext();
      const texts = JSON.stringify(context.messages);
      expect(texts).not.toContain("did a");
      expect(texts).not.toContain("was landed into main");
      expect(texts).not.toContain("Your base moved");
      expect(texts).toContain("kept as a message");
      expect(texts).toContain("second question");
    });
  }
});
