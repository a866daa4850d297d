/**
 * The parent guard under a live writer: the parent Pi goes on appending to its session (the user
 * keeps chatting) while the fork reads it. Another process appends entries, some written in two
 * pieces so the fork may read half a line, for the whole time the fork (in its worker) runs. The
 * parent must end up exactly as its writer wrote it (the fork never writes it), and the child
 * must hold exactly the active path up to the leaf the handoff started from, plus one message.
 */
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  buildSessionContext,
  CURRENT_SESSION_VERSION,
  getPackageDir,
  parseSessionEntries,
  SessionManager,
  type SessionEntry,
} from "@earendil-works/pi-coding-agent";
import { locatePiSessionModule, runFork } from "../../src/session/fork-runner.ts";
import { buildHandoffMessage } from "../../src/session/handoff-message.ts";
import { NODE_BIN } from "../support/pi.ts";

/** Appends `count` entries continuing from `leaf`, half of them in two writes; logs its first and last write time. */
const APPENDER = `
const { appendFileSync, writeFileSync } = require("node:fs");
const [file, log, leaf, count] = process.argv.slice(1);
let parent = leaf;
const started = Date.now();
for (let i = 0; i < Number(count); i++) {
  const id = "ap" + String(i).padStart(6, "0");
  const line = JSON.stringify({ type: "message", id, parentId: parent, timestamp: new Date().toISOString(),
    message: { role: "user", content: [{ type: "text", text: "later question " + i + " " + "z".repeat(200) }], timestamp: Date.now() } }) + "\\n";
  if (i % 2 === 0) { appendFileSync(file, line); appendFileSync(log, line); }
  else { const cut = 1 + (i % (line.length - 2)); appendFileSync(file, line.slice(0, cut)); appendFileSync(log, line.slice(0, cut));
    const until = Date.now() + 1; while (Date.now() < until) {} appendFileSync(file, line.slice(cut)); appendFileSync(log, line.slice(cut)); }
  parent = id;
  if (i === 0) process.stdout.write("started\\n");
}
writeFileSync(log + ".times", JSON.stringify({ first: started, last: Date.now() }));
`;

describe("a fork while the parent session is being appended to", () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("leaves the parent exactly as its writer wrote it and copies the path up to the handoff's leaf", async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "fork-append-")));
    const manager = SessionManager.create(join(dir, "repo"), join(dir, "sessions"));
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "first" }], timestamp: Date.now() });
    const parentFile = manager.getSessionFile() ?? "";
    // A long conversation (~12 MB), so the fork is still reading when the writer appends.
    const lines: string[] = [];
    let parent = manager.getLeafId() ?? "";
    for (let i = 0; i < 20_000; i++) {
      const id = `hist${String(i).padStart(6, "0")}`;
      const role = i % 2 === 0 ? "assistant" : "user";
      const message =
        role === "user"
          ? { role, content: [{ type: "text", text: `question ${i} ${"q".repeat(400)}` }], timestamp: Date.now() }
          : {
              role,
              content: [{ type: "text", text: `answer ${i} ${"a".repeat(400)}` }],
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
              stopReason: "stop",
              timestamp: Date.now(),
            };
      lines.push(
        JSON.stringify({ type: "message", id, parentId: parent, timestamp: new Date().toISOString(), message }),
      );
      parent = id;
    }
    appendFileSync(parentFile, `${lines.join("\n")}\n`);
    const leaf = parent;
    const original = readFileSync(parentFile);
    const log = join(dir, "appended.log");
    writeFileSync(log, "");

    const appender = spawn(NODE_BIN, ["-e", APPENDER, parentFile, log, leaf, "4000"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = new Promise<number | null>((resolve) => appender.on("close", resolve));
    await new Promise<void>((resolve) => appender.stdout.once("data", () => resolve()));

    const forkStarted = Date.now();
    const result = await runFork(
      {
        parentSessionFile: parentFile,
        leafId: leaf,
        childCwd: join(dir, "wt"),
        childSessionDir: join(dir, "child-sessions"),
        message: buildHandoffMessage({
          handoffId: "20261130-000000-append-abcd",
          manifestPath: join(dir, "m.json"),
          branch: "append",
          baseRef: "HEAD",
          baseSha: "e".repeat(40),
          worktreePath: join(dir, "wt"),
          mainCheckout: join(dir, "repo"),
          parentSessionFile: parentFile,
        }),
      },
      { sessionModulePath: locatePiSessionModule(getPackageDir()), host: { SessionManager, CURRENT_SESSION_VERSION } },
    );
    const forkEnded = Date.now();
    expect(await exited).toBe(0);

    // The writer was writing while the fork ran.
    const times = JSON.parse(readFileSync(`${log}.times`, "utf8")) as { first: number; last: number };
    expect(times.first).toBeLessThan(forkEnded);
    expect(times.last).toBeGreaterThan(forkStarted);

    // The parent is byte for byte what its writer wrote: the original plus every appended byte.
    expect(Buffer.compare(readFileSync(parentFile), Buffer.concat([original, readFileSync(log)]))).toBe(0);

    // The child: the path up to the handoff's leaf, nothing appended later, one handoff message.
    expect(result.pathEntries).toBe(20_001);
    const child = parseSessionEntries(readFileSync(result.childSessionFile, "utf8"));
    const body = child.slice(1) as SessionEntry[];
    expect(body.map((entry) => entry.id).filter((id) => id.startsWith("ap"))).toEqual([]);
    expect(body.filter((entry) => entry.type === "custom_message")).toHaveLength(1);
    expect(body.at(-1)).toMatchObject({ type: "custom_message", customType: "handoff-worktree", parentId: leaf });
    const parentEntries = parseSessionEntries(original.toString("utf8")).slice(1) as SessionEntry[];
    const childContext = buildSessionContext(body, body.at(-1)?.id);
    expect(childContext.messages.slice(0, -1)).toEqual(buildSessionContext(parentEntries, leaf).messages);
  });
});
