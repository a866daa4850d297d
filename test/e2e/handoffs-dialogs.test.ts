/**
 * `/handoffs remove` in the real Pi TUI (faux provider, offline) in a real tmux pane, on a real
 * handoff (the recovery rig: real git, real transaction, a stand-in child): a reflexive Enter, or
 * Escape, on each question keeps everything (issue 41, point 3), with Pi's own dialogs deciding
 * what Enter picks; a removal chosen explicitly (Down then Enter, or the branch name typed) is made.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NODE_BIN, PI_CLI, EXTENSION_ENTRY, FAUX_MODEL, PROJECT_ROOT } from "../support/pi.ts";
import { createRecoveryRig, killAndWait, runningManifest, type RecoveryRig } from "../support/recovery-rig.ts";
import { waitFor } from "../support/tmux.ts";
import { PI_READY, submitLine, tmuxPane, waitForScreen, type PaneDriver } from "../support/tui.ts";

let rig: RecoveryRig;
let pane: PaneDriver;
let paneId: string;

const quote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

beforeAll(async () => {
  rig = await createRecoveryRig();
  // The real Pi in the rig's first pane, on the rig's agent dir (its manifests), offline with the faux model.
  const extensions = join(rig.agentDir, "extensions");
  mkdirSync(extensions, { recursive: true });
  copyFileSync(
    join(PROJECT_ROOT, "test", "support", "fixtures", "faux-provider.ts"),
    join(extensions, "faux-provider.ts"),
  );
  const env: Record<string, string> = {
    ...rig.env,
    PATH: `${join(PROJECT_ROOT, "node_modules", ".bin")}:${rig.env.PATH ?? process.env.PATH ?? "/usr/bin:/bin"}`,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    PI_SUBAGENTS_TEMP_ROOT: join(rig.repo.dir, "pi-subagents"),
  };
  const script = join(rig.repo.dir, "start-pi.sh");
  writeFileSync(
    script,
    [
      ...Object.entries(env).map(([key, value]) => `export ${key}=${quote(value)}`),
      `cd ${quote(rig.repo.root)} && exec ${[NODE_BIN, PI_CLI, "--model", FAUX_MODEL, "--extension", EXTENSION_ENTRY].map(quote).join(" ")}`,
      "",
    ].join("\n"),
  );
  paneId = rig.tmux.firstPaneId;
  pane = tmuxPane(rig.tmux, paneId);
  await rig.tmux.tmux(["send-keys", "-t", paneId, "-l", `sh ${quote(script)}`]);
  await rig.tmux.tmux(["send-keys", "-t", paneId, "Enter"]);
  await waitForScreen(pane, PI_READY, "Pi ready", 60_000);
}, 120_000);

afterAll(async () => {
  await rig?.cleanup();
});

const key = (name: string): Promise<string> => rig.tmux.tmux(["send-keys", "-t", paneId, name]);

/** The dialog gone from the screen (Pi's editor back): its answer was taken. */
const closed = (marker: string): Promise<true> =>
  waitFor(async () => ((await pane.read()).includes(marker) ? undefined : true), {
    timeoutMs: 20_000,
    description: `the dialog showing ${marker} to close`,
  });

describe("/handoffs in the real Pi TUI", () => {
  it("keeps the handoff on Enter or Escape at each question; removes it only when chosen explicitly", async () => {
    const manifest = runningManifest(await rig.handoff("ui/tui", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const worktree = manifest.worktree.path;
    writeFileSync(join(worktree, "draft.txt"), "a draft\n");
    const world = () => ({
      manifest: readFileSync(rig.store.pathFor(manifest.id), "utf8"),
      refs: rig.repo.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]),
      status: rig.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: worktree }),
    });
    let before = world();
    const typed = "type ui/tui and press Enter";

    // Work lost for good: the name must be typed. Enter at once keeps it; so does Escape.
    await submitLine(pane, "/handoffs remove ui/tui", new RegExp(typed));
    expect(await pane.read()).toContain("  untracked  draft.txt");
    await key("Enter");
    await closed(typed);
    expect(world()).toEqual(before);
    await submitLine(pane, "/handoffs remove ui/tui", new RegExp(typed));
    await key("Escape");
    await closed(typed);
    expect(world()).toEqual(before);

    // Nothing lost for good: a choice that starts on keeping it. Enter at once keeps it.
    rmSync(join(worktree, "draft.txt"));
    before = world();
    await submitLine(pane, "/handoffs remove ui/tui", /→ No, keep it/);
    expect(await pane.read()).toMatch(/^\s+Yes, remove it\s*$/m);
    await key("Enter");
    await closed("Yes, remove it");
    expect(world()).toEqual(before);

    // Chosen explicitly (Down, Enter): removed; Enter at once on "Also delete branch" keeps the branch.
    await submitLine(pane, "/handoffs remove ui/tui", /→ No, keep it/);
    await key("Down");
    await waitForScreen(pane, /→ Yes, remove it/, "the removal selected");
    await key("Enter");
    await waitForScreen(pane, /→ No, keep the branch/, "the branch question");
    await key("Enter");
    await waitForScreen(pane, new RegExp(`Removed handoff ${manifest.id}: `), "the removal's notice");
    expect(existsSync(worktree)).toBe(false);
    expect((await rig.read(manifest.id)).state).toBe("removed");
    expect(rig.repo.run(["rev-parse", "refs/heads/ui/tui"])).toBe(manifest.base.sha);
  }, 180_000);
});
