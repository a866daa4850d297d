/**
 * src/session/usage.ts on hand-written session files: Pi's rule of what counts, the fork point, a
 * line still being written, and the cache (a file that grew is read from where the last read
 * stopped; one rewritten is read again; the cache survives the process).
 */
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HANDOFF_MESSAGE_TYPE } from "../../src/session/handoff-message.ts";
import { SessionUsageCache, usageCacheFile, UsageCacheFileSchema } from "../../src/session/usage.ts";

const usage = (input: number, output: number, cacheRead: number, cacheWrite: number, cost: number) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
  totalTokens: input + output + cacheRead + cacheWrite,
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: cost },
});
const line = (value: unknown) => `${JSON.stringify(value)}\n`;
const header = line({ type: "session", version: 3, id: "s1", timestamp: "2026-12-01T00:00:00.000Z", cwd: "/r" });
const assistant = (id: string, u: unknown, text = "ok") =>
  line({
    type: "message",
    id,
    parentId: null,
    timestamp: "2026-12-01T00:00:00.000Z",
    message: { role: "assistant", content: [{ type: "text", text }], usage: u, stopReason: "stop", timestamp: 1 },
  });
const handoffMessage = (id: string, handoffId: string) =>
  line({
    type: "custom_message",
    customType: HANDOFF_MESSAGE_TYPE,
    content: 'text that says "usage":{ and "handoff-worktree"',
    display: true,
    details: { handoffId },
    id,
    parentId: null,
    timestamp: "2026-12-01T00:00:00.000Z",
  });

/** A user message of about 10 KB: what puts an entry outside the fingerprinted start and end. */
const padding = (id: string) =>
  line({ type: "message", id, parentId: null, message: { role: "user", content: "p".repeat(10_000) } });

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "phw-usage-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("what counts, as Pi counts a session's totals", () => {
  it("sums assistant messages, tool results with usage, usage entries, and summaries with usage; nothing else", async () => {
    const file = join(dir, "s.jsonl");
    writeFileSync(
      file,
      header +
        line({ type: "message", id: "u1", message: { role: "user", content: 'say "usage":{"input":999}' } }) +
        assistant("a1", usage(10, 20, 30, 40, 0.5), 'I print "usage":{"input":1000}') +
        line({
          type: "message",
          id: "t1",
          message: { role: "toolResult", content: [], usage: usage(1, 2, 3, 4, 0.25) },
        }) +
        line({ type: "message", id: "t2", message: { role: "toolResult", content: [] } }) +
        line({ type: "usage", id: "w1", kind: "cache_warm", usage: usage(0, 0, 100, 0, 0.125) }) +
        line({ type: "compaction", id: "c1", summary: "s", firstKeptEntryId: "a1", usage: usage(5, 5, 0, 0, 0) }) +
        line({ type: "branch_summary", id: "b1", fromId: "a1", summary: "s" }) +
        line({ type: "custom", id: "x1", customType: "other", data: { usage: usage(1000, 1000, 0, 0, 9) } }) +
        line({ type: "message", id: "u2", message: { role: "user", content: "x", usage: usage(7, 7, 7, 7, 7) } }) +
        // A tool call whose arguments hold a "usage" object: only the message's own usage counts.
        line({
          type: "message",
          id: "a2",
          message: {
            role: "assistant",
            content: [{ type: "toolCall", name: "t", arguments: { usage: { input: 500, output: 500 } } }],
            usage: usage(100, 0, 0, 0, 0),
            stopReason: "toolUse",
          },
        }) +
        // Keys in another order than Pi writes them: decoded whole, counted the same.
        line({
          type: "message",
          id: "a3",
          message: { usage: usage(1000, 0, 0, 0, 0), role: "assistant", content: [] },
        }) +
        "not json\n" +
        // Last in the file, its usage last in the line: nothing follows it to look at.
        line({ type: "message", id: "a4", message: { role: "assistant", content: [], usage: usage(0, 3, 0, 0, 0) } }),
    );
    const read = await new SessionUsageCache(undefined).usageOf(file);
    expect(read).toEqual({
      code: "read",
      own: { input: 1116, output: 30, cacheRead: 133, cacheWrite: 44, cost: 0.875 },
      whole: { input: 1116, output: 30, cacheRead: 133, cacheWrite: 44, cost: 0.875 },
      forkPoint: "start",
      bytes: readFileSync(file).length,
      pending: false,
    });
  });

  it("a missing file is missing", async () => {
    expect(await new SessionUsageCache(undefined).usageOf(join(dir, "none.jsonl"))).toEqual({ code: "missing" });
  });
});

describe("the fork point", () => {
  const forked = () =>
    header +
    assistant("p1", usage(100, 100, 0, 0, 1)) +
    handoffMessage("h1", "first") +
    assistant("c1", usage(1, 2, 3, 4, 0.5)) +
    handoffMessage("h2", "second") +
    assistant("g1", usage(10, 10, 10, 10, 0.25));

  it("counts only what follows the handoff's own message, whichever others are in the file", async () => {
    const file = join(dir, "child.jsonl");
    writeFileSync(file, forked());
    const cache = new SessionUsageCache(undefined);
    const first = await cache.usageOf(file, "first");
    const second = await cache.usageOf(file, "second");
    expect(first.code === "read" && [first.own, first.forkPoint]).toEqual([
      { input: 11, output: 12, cacheRead: 13, cacheWrite: 14, cost: 0.75 },
      "handoff_message",
    ]);
    expect(second.code === "read" && [second.own, second.forkPoint]).toEqual([
      { input: 10, output: 10, cacheRead: 10, cacheWrite: 10, cost: 0.25 },
      "handoff_message",
    ]);
    const unknown = await cache.usageOf(file, "not-there");
    expect(unknown.code === "read" && [unknown.own, unknown.forkPoint]).toEqual([
      { input: 10, output: 10, cacheRead: 10, cacheWrite: 10, cost: 0.25 },
      "last_handoff_message",
    ]);
    const root = await cache.usageOf(file);
    expect(root.code === "read" && [root.own.input, root.forkPoint]).toEqual([111, "start"]);
  });
});

describe("a session being written, and the cache", () => {
  it("leaves a last line without its newline for the next read, then counts it", async () => {
    const file = join(dir, "live.jsonl");
    const cache = new SessionUsageCache(undefined);
    const complete = header + assistant("a1", usage(1, 1, 0, 0, 0));
    const next = assistant("a2", usage(2, 2, 0, 0, 0));
    writeFileSync(file, complete + next.slice(0, 40));
    const partial = await cache.usageOf(file);
    expect(partial.code === "read" && [partial.own.input, partial.bytes, partial.pending]).toEqual([
      1,
      Buffer.byteLength(complete),
      true,
    ]);
    appendFileSync(file, next.slice(40));
    const done = await cache.usageOf(file);
    expect(done.code === "read" && [done.own.input, done.pending]).toEqual([3, false]);
  });

  it("reads a file that only grew from where it stopped, and one rewritten from its start", async () => {
    const file = join(dir, "grow.jsonl");
    const first = padding("p1") + assistant("a1", usage(1, 0, 0, 0, 0)) + padding("p2");
    writeFileSync(file, header + first);
    const cache = new SessionUsageCache(undefined);
    expect((await cache.usageOf(file)).code).toBe("read");
    // Rewrite the entry's count in place (same length, between the fingerprinted start and end): a
    // reader that reads from the start again would see 9; one that reads only what was appended keeps 1.
    writeFileSync(file, header + first.replace('"input":1', '"input":9'));
    appendFileSync(file, assistant("a2", usage(2, 0, 0, 0, 0)));
    const grown = await cache.usageOf(file);
    expect(grown.code === "read" && grown.own.input).toBe(3);
    // A file whose end before the offset changed is read again whole.
    writeFileSync(
      file,
      header + assistant("b1", usage(5, 0, 0, 0, 0)) + assistant("b2", usage(6, 0, 0, 0, 0)) + "\n\n\n",
    );
    const rewritten = await cache.usageOf(file);
    expect(rewritten.code === "read" && rewritten.own.input).toBe(11);
  });

  it("keeps its sums between processes in the agent dir's cache file", async () => {
    const agentDir = join(dir, "agent");
    const file = join(dir, "kept.jsonl");
    const first = padding("p1") + assistant("a1", usage(4, 0, 0, 0, 0)) + padding("p2");
    writeFileSync(file, header + first);
    const before = SessionUsageCache.forAgentDir(agentDir);
    await before.usageOf(file);
    await before.save();
    const saved = UsageCacheFileSchema.parse(JSON.parse(readFileSync(usageCacheFile(agentDir), "utf8")));
    expect(saved.files[file]?.state.whole.input).toBe(4);
    // Changed in place, then grown: a new process trusts the saved sum up to the saved offset.
    writeFileSync(file, header + first.replace('"input":4', '"input":8'));
    appendFileSync(file, assistant("a2", usage(1, 0, 0, 0, 0)));
    const after = await SessionUsageCache.forAgentDir(agentDir).usageOf(file);
    expect(after.code === "read" && after.own.input).toBe(5);
  });

  it("an unreadable cache file is an empty cache", async () => {
    const agentDir = join(dir, "agent2");
    const file = join(dir, "k.jsonl");
    writeFileSync(file, header + assistant("a1", usage(4, 0, 0, 0, 0)));
    const cache = SessionUsageCache.forAgentDir(agentDir);
    await cache.usageOf(file);
    await cache.save();
    writeFileSync(usageCacheFile(agentDir), "{ not json");
    const read = await SessionUsageCache.forAgentDir(agentDir).usageOf(file);
    expect(read.code === "read" && read.own.input).toBe(4);
  });
});
