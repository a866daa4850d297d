/**
 * The parent's view of its children takes Herdr's own word where Herdr has one: a child whose
 * session says its last turn finished shows as working while Herdr sees Pi's "Working..." on its
 * screen (Herdr's Pi manifest, src/detect/manifests/pi.toml), and idle again once it is gone. One
 * `herdr pane list` per server per refresh (the double's call log shows it); a server that does not
 * answer changes nothing. On the real Herdr (herdr-real project) and on the double.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../src/manifest/schema.ts";
import type { HerdrLocation } from "../../src/manifest/locations.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { herdrAgentStatuses } from "../../src/mux/herdr/agent-statuses.ts";
import { ownHandoffStatuses } from "../../src/watch/watch.ts";
import { HERDR_TARGET, startHerdr, type HerdrServer } from "../support/herdr.ts";
import { storeRunningHandoff } from "../support/running-handoff.ts";
import { waitFor } from "../support/tmux.ts";

const T1 = "2026-01-01T10:00:00.000Z";
const T2 = "2026-01-01T10:01:00.000Z";
const dir = mkdtempSync(join(tmpdir(), "phw-watch-herdr-"));
let herdr: HerdrServer;

beforeAll(async () => {
  herdr = await startHerdr();
});
afterAll(async () => {
  await herdr?.kill();
  rmSync(dir, { recursive: true, force: true });
});

/** A session whose last turn finished: its tail alone says idle. */
function finishedSession(name: string): string {
  const file = join(dir, `${name}.jsonl`);
  const lines = [
    { type: "message", timestamp: T1, message: { role: "user", content: "go" } },
    {
      type: "message",
      timestamp: T2,
      message: { role: "assistant", content: [{ type: "text", text: "done" }], stopReason: "stop" },
    },
  ];
  writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  return file;
}

async function handoff(store: ManifestStore, branch: string, mux: HerdrLocation, sessionFile: string): Promise<string> {
  const parent = { sessionFile: join(dir, "parent.jsonl"), sessionId: "parent" };
  return (await storeRunningHandoff(store, { branch, at: T1, parent, child: { sessionFile }, worktreeRoot: dir, mux }))
    .id;
}

describe(`the parent's view with Herdr's agent_status (${HERDR_TARGET})`, () => {
  it("shows a child working while Herdr sees Pi working, idle once it stops, and nothing from a server that is gone", async () => {
    // A program Herdr detects as Pi (its process is named `pi`) that shows "Working..." until told to stop.
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const stop = join(dir, "stop");
    writeFileSync(
      join(bin, "pi"),
      `#!/bin/bash\nprintf 'Working...\\n'\nwhile [ ! -e '${stop}' ]; do sleep 0.05; done\nclear\nprintf 'ready\\n'\nexec sleep 600\n`,
    );
    chmodSync(join(bin, "pi"), 0o755);
    const busy = await herdr.openWorkspace(dir, "busy");
    const plain = await herdr.openWorkspace(dir, "plain");
    const at = (pane: { workspaceId: string; tabId: string; paneId: string }): HerdrLocation => ({
      kind: "herdr",
      socketPath: herdr.socketPath,
      ...pane,
    });

    const store = ManifestStore.forAgentDir(join(dir, "agent"));
    const busyId = await handoff(store, "feat/busy", at(busy), finishedSession("busy"));
    await handoff(store, "feat/plain", at(plain), finishedSession("plain"));
    await handoff(
      store,
      "feat/gone",
      { kind: "herdr", socketPath: join(dir, "no-server.sock"), workspaceId: "w9", tabId: "w9:t1", paneId: "w9:p1" },
      finishedSession("gone"),
    );
    // An exited child (no live lease) on the same server: Herdr is not asked about it.
    const exitedSession = finishedSession("exited");
    await handoff(store, "feat/exited", at(plain), exitedSession);
    const parent = { sessionFile: join(dir, "parent.jsonl"), sessionId: "parent" };
    const asked: string[][] = [];
    const fromHerdr = herdrAgentStatuses(herdr.clientEnv);
    const deps = {
      store,
      now: () => new Date(T2),
      readLease: async (file: string) =>
        file === exitedSession
          ? { state: "none" as const }
          : { state: "live" as const, pid: process.pid, heartbeatAt: T2 },
      agentStatuses: (manifests: readonly Manifest[]) => {
        asked.push(manifests.map((manifest) => manifest.branch).sort());
        return fromHerdr(manifests);
      },
    };
    const states = async () =>
      (await ownHandoffStatuses(deps, parent))
        .map((own) => [own.branch, own.status.state, own.status.basis])
        .sort(([a], [b]) => String(a).localeCompare(String(b)));

    expect(await states()).toEqual([
      ["feat/busy", "idle", "its last turn finished"],
      ["feat/exited", "exited", "no Pi runs on its session"],
      ["feat/gone", "idle", "its last turn finished"],
      ["feat/plain", "idle", "its last turn finished"],
    ]);
    expect(asked).toEqual([["feat/busy", "feat/gone", "feat/plain"]]);
    await herdr.herdr(["pane", "run", busy.paneId, join(bin, "pi")]);
    await waitFor(async () => (await herdr.read(busy.paneId)).includes("Working..."), {
      timeoutMs: 10_000,
      description: "the stand-in to show Working...",
    });
    // The real Herdr says `unknown` for a Pi it has just found until its start-up grace is over
    // (src/pane/agent_detection.rs AGENT_STARTUP_GRACE_WINDOW), then what its screen shows.
    await waitFor(async () => (await states()).find(([branch]) => branch === "feat/busy")?.[1] === "working", {
      timeoutMs: 15_000,
      description: "Herdr to report the stand-in working",
    });
    if (herdr.kind === "double") herdr.clearCalls();
    expect(await states()).toEqual([
      ["feat/busy", "working", "Herdr reports it working"],
      ["feat/exited", "exited", "no Pi runs on its session"],
      ["feat/gone", "idle", "its last turn finished"],
      ["feat/plain", "idle", "its last turn finished"],
    ]);
    // One question to the live server per refresh (the gone one is asked too, and answers nothing).
    if (herdr.kind === "double")
      expect(
        herdr.calls().map((call) => call.argv.filter((arg) => !arg.startsWith("-") && arg !== herdr.socketPath)),
      ).toEqual([["pane", "list"]]);

    writeFileSync(stop, "");
    await waitFor(async () => (await herdr.read(busy.paneId)).includes("ready"), {
      timeoutMs: 10_000,
      description: "the stand-in to stop working",
    });
    // Herdr looks at the screen on its own ticks (300 ms once it knows the agent): idle once it has.
    const after = await waitFor(
      async () => {
        const status = (await ownHandoffStatuses(deps, parent)).find((own) => own.id === busyId)?.status;
        return status?.state === "working" ? undefined : status;
      },
      { timeoutMs: 10_000, description: "Herdr to see the stand-in stop working" },
    );
    expect(after).toEqual({ state: "idle", since: T2, basis: "its last turn finished" });
  });
});
