/**
 * `/handoffs` on real handoffs (the recovery rig: real transaction, git, tmux, stand-in child),
 * driven through Pi's command context: the picker, a relaunch, and a removal done only after
 * the question listed exactly what is lost (and cancelled if more would be lost by then). Every
 * question before a change answers "keep" to a reflexive Enter (its first option, or an empty
 * name where the branch name must be typed) and to Escape. In print mode the list goes to stderr.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runHandoffs } from "../../pi-extension/handoffs-command.ts";
import { LandGit } from "../../src/git/land.ts";
import { createRebaseDeps } from "../../src/cli/deps.ts";
import { ChildReportStore } from "../../src/manifest/child-reports.ts";
import { NODE_BIN } from "../support/pi.ts";
import {
  createRecoveryRig,
  isProcessAlive,
  killAndWait,
  runningManifest,
  STAND_IN_PI,
  type RecoveryRig,
} from "../support/recovery-rig.ts";

let rig: RecoveryRig;

beforeAll(async () => {
  rig = await createRecoveryRig();
});
afterAll(async () => {
  await rig?.cleanup();
});

/** What landing needs beyond recovery's deps, on the rig's agent dir. */
function landExtras(r: RecoveryRig) {
  return { landGit: new LandGit({ env: r.env }), reports: ChildReportStore.forAgentDir(r.agentDir) };
}

interface Dialog {
  kind: "select" | "input" | "notify";
  title: string;
  body: string | string[];
}

/** Pressing Enter at once in a select: its first option. */
const ENTER = (_title: string, options: string[]): string | undefined => options[0];

/**
 * A command context whose UI answers from a script and records every dialog. `confirm` is Pi's own
 * (interactive-mode.ts `showExtensionConfirm`): a select of "Yes" then "No", "Yes" on Enter.
 */
function scriptedContext(answers: {
  select: (title: string, options: string[]) => string | undefined;
  input?: (title: string) => string | undefined;
}): { ctx: ExtensionCommandContext; dialogs: Dialog[] } {
  const dialogs: Dialog[] = [];
  const ui = {
    select: async (title: string, options: string[]) => {
      dialogs.push({ kind: "select", title, body: options });
      return answers.select(title, options);
    },
    confirm: async (title: string, message: string) => {
      const options = ["Yes", "No"];
      dialogs.push({ kind: "select", title: `${title}\n${message}`, body: options });
      return answers.select(`${title}\n${message}`, options) === "Yes";
    },
    input: async (title: string, placeholder: string) => {
      dialogs.push({ kind: "input", title, body: placeholder });
      // Enter on an empty line, unless the script types something.
      return answers.input === undefined ? "" : answers.input(title);
    },
    notify: (message: string, level?: string) => {
      dialogs.push({ kind: "notify", title: level ?? "info", body: message });
    },
    setStatus: () => {},
  };
  // Only the parts of the context `/handoffs` uses.
  return { ctx: { hasUI: true, ui } as unknown as ExtensionCommandContext, dialogs };
}

/** Picks handoff `id` in the list, then `action` in its menu; then each question's option among `answers` (else Enter). */
function pick(id: string, action: string, answers: readonly string[] = []) {
  return (title: string, options: string[]): string | undefined =>
    title === "Handoffs"
      ? options.find((option) => option.endsWith(`(${id})`))
      : (options.find((option) => option === action || answers.includes(option)) ?? options[0]);
}

describe("/handoffs", () => {
  it("lands from the picker: asks how when a fast-forward is not possible, shows the plan, then lands and says so", async () => {
    const manifest = runningManifest(await rig.handoff("ui/land", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    rig.repo.run(["config", "user.name", "Land Test"]);
    rig.repo.run(["config", "user.email", "land-test@example.invalid"]);
    const tip = rig.repo.commitFile("landed.txt", "landed\n", "ui/land: work", { cwd: manifest.worktree.path });
    const moved = rig.repo.commitFile("moved.txt", "moved\n", "main moves on");
    const { ctx, dialogs } = scriptedContext({
      select: pick(manifest.id, "Land its commits", ["merge", "Yes, land it"]),
    });
    await runHandoffs("", ctx, { deps: rig.recoveryDeps(), landDeps: { ...rig.recoveryDeps(), ...landExtras(rig) } });
    expect(dialogs[1]).toMatchObject({
      kind: "select",
      body: [
        "Relaunch its Pi",
        "Switch to its window",
        "Inspect",
        "Land its commits",
        "Rebase it onto its target's new tip",
        "Remove it",
      ],
    });
    expect(dialogs[2]).toEqual({
      kind: "select",
      title:
        "main has moved on since ui/land left it, so it cannot be fast-forwarded; nothing was landed. Choose how: --strategy rebase, merge or squash.\nLand how?",
      body: ["Cancel: land nothing", "rebase", "merge", "squash"],
    });
    expect(dialogs[3]).toMatchObject({
      kind: "select",
      title: expect.stringMatching(
        new RegExp(`^Land ui/land into main\\?\n(.*\n)*  ${tip.slice(0, 12)} ui/land: work`),
      ),
      body: ["No, do not land it", "Yes, land it"],
    });
    const merged = rig.repo.run(["rev-parse", "main"]);
    expect(rig.repo.run(["rev-list", "--parents", "-n", "1", "main"]).split(" ").slice(1)).toEqual([moved, tip]);
    expect(dialogs.at(-1)).toEqual({
      kind: "notify",
      title: "info",
      body: `Landed 1 commit of ui/land into main (merge): main is now at ${merged}.`,
    });
    expect(
      (await rig.read(manifest.id)).landings?.map((landing) => [landing.state, landing.strategy, landing.to]),
    ).toEqual([["landed", "merge", merged]]);
  });

  it("a reflexive Enter (or Escape) on every question changes nothing; the change chosen explicitly is made", async () => {
    const manifest = runningManifest(await rig.handoff("ui/enter", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const worktree = manifest.worktree.path;
    rig.repo.run(["config", "user.name", "Enter Test"]);
    rig.repo.run(["config", "user.email", "enter-test@example.invalid"]);
    const tip = rig.repo.commitFile("enter.txt", "work\n", "ui/enter: work", { cwd: worktree });
    rig.repo.commitFile("elsewhere.txt", "main moves\n", "main moves on");
    writeFileSync(join(worktree, "draft.txt"), "a draft\n");
    const options = {
      deps: rig.recoveryDeps(),
      landDeps: { ...rig.recoveryDeps(), ...landExtras(rig) },
      rebaseDeps: createRebaseDeps(rig.env),
    };
    // Everything a change could touch: the manifest's bytes, the refs, the worktree's files.
    const world = () => ({
      manifest: readFileSync(rig.store.pathFor(manifest.id), "utf8"),
      refs: rig.repo.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]),
      status: rig.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: worktree }),
      draft: existsSync(join(worktree, "draft.txt")) ? readFileSync(join(worktree, "draft.txt"), "utf8") : null,
    });
    let before = world();
    const run = async (line: string, script: Parameters<typeof scriptedContext>[0]): Promise<Dialog[]> => {
      const { ctx, dialogs } = scriptedContext(script);
      await runHandoffs(line, ctx, options);
      expect(world()).toEqual(before);
      return dialogs;
    };
    // The questions asked, after the list and the handoff's menu (when picked there).
    const asked = (dialogs: Dialog[]) =>
      dialogs
        .filter((dialog) => dialog.title !== "Handoffs" && !dialog.title.startsWith(`ui/enter (${manifest.id})`))
        .map((dialog) => [dialog.kind, dialog.body]);

    // Remove, with a file lost for good: the name must be typed; Enter, Escape or another name keep it.
    expect(asked(await run("", { select: pick(manifest.id, "Remove it") }))).toEqual([["input", ""]]);
    await run("", { select: pick(manifest.id, "Remove it"), input: () => undefined });
    expect((await run("remove ui/enter", { select: ENTER, input: () => "ui/ente" })).at(-1)).toEqual({
      kind: "notify",
      title: "warning",
      body: '"ui/ente" is not ui/enter; nothing was changed.',
    });
    // Landing and rebasing refuse uncommitted work in the worktree: the draft goes (the test's own step).
    rmSync(join(worktree, "draft.txt"));
    before = world();
    // Land: Enter on the strategy cancels; a strategy chosen, Enter on the plan lands nothing.
    expect(asked(await run("", { select: pick(manifest.id, "Land its commits") }))).toEqual([
      ["select", ["Cancel: land nothing", "rebase", "merge", "squash"]],
    ]);
    expect(asked(await run("", { select: pick(manifest.id, "Land its commits", ["merge"]) }))).toEqual([
      ["select", ["Cancel: land nothing", "rebase", "merge", "squash"]],
      ["select", ["No, do not land it", "Yes, land it"]],
    ]);
    expect(asked(await run("land ui/enter", { select: ENTER }))).toEqual([
      ["select", ["Cancel: land nothing", "rebase", "merge", "squash"]],
    ]);
    // Rebase: Enter on the plan leaves it as it is.
    expect(asked(await run("", { select: pick(manifest.id, "Rebase it onto its target's new tip") }))).toEqual([
      ["select", ["No, leave it as it is", "Yes, rebase it"]],
    ]);

    // Chosen explicitly, the rebase is made: the branch's one commit re-made on main's tip.
    const { ctx, dialogs } = scriptedContext({
      select: pick(manifest.id, "Rebase it onto its target's new tip", ["Yes, rebase it"]),
    });
    await runHandoffs("", ctx, options);
    expect(dialogs.at(-1)).toMatchObject({ kind: "notify", title: "info" });
    const rebased = rig.repo.run(["rev-parse", "refs/heads/ui/enter"]);
    expect(rebased).not.toBe(tip);
    expect(rig.repo.run(["rev-parse", `${rebased}^`])).toBe(rig.repo.run(["rev-parse", "main"]));
  });

  it("a reflexive Enter keeps a handoff whose removal loses nothing, and its branch when offered for deletion", async () => {
    const manifest = runningManifest(await rig.handoff("ui/enter-clean", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const manifestBytes = () => readFileSync(rig.store.pathFor(manifest.id), "utf8");
    const before = manifestBytes();
    const kept = scriptedContext({ select: pick(manifest.id, "Remove it") });
    await runHandoffs("", kept.ctx, { deps: rig.recoveryDeps() });
    expect(manifestBytes()).toBe(before);
    expect(existsSync(manifest.worktree.path)).toBe(true);
    expect(rig.repo.run(["rev-parse", "refs/heads/ui/enter-clean"])).toBe(manifest.base.sha);
    expect(kept.dialogs.slice(2).map((dialog) => [dialog.kind, dialog.body])).toEqual([
      ["select", ["No, keep it", "Yes, remove it"]],
    ]);
    // Removal chosen; Enter on "Also delete branch" keeps the branch.
    const removed = scriptedContext({ select: pick(manifest.id, "Remove it", ["Yes, remove it"]) });
    await runHandoffs("", removed.ctx, { deps: rig.recoveryDeps() });
    expect(removed.dialogs.at(-2)?.body).toEqual(["No, keep the branch", "Yes, delete the branch"]);
    expect(existsSync(manifest.worktree.path)).toBe(false);
    expect(rig.repo.run(["rev-parse", "refs/heads/ui/enter-clean"])).toBe(manifest.base.sha);
  });

  it("prune in the TUI lists what it would do and asks; Enter prunes nothing, the prune chosen is made", async () => {
    // A repository of its own: prune --merged acts on every handoff of the agent dir.
    const own = await createRecoveryRig();
    try {
      const manifest = runningManifest(await own.handoff("pr/merged", { focus: false }));
      await killAndWait(manifest.child.pid ?? 0);
      own.repo.run(["config", "user.name", "Prune Test"]);
      own.repo.run(["config", "user.email", "prune-test@example.invalid"]);
      const tip = own.repo.commitFile("pruned.txt", "merged\n", "pr/merged: work", { cwd: manifest.worktree.path });
      own.repo.run(["merge", "--ff-only", "--quiet", "pr/merged"]);
      const world = () => ({
        manifest: readFileSync(own.store.pathFor(manifest.id), "utf8"),
        refs: own.repo.run(["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]),
        worktree: existsSync(manifest.worktree.path),
      });
      const before = world();
      const run = async (answer: string | undefined): Promise<Dialog[]> => {
        const { ctx, dialogs } = scriptedContext({
          select: (_title, options) => options.find((option) => option === answer) ?? options[0],
        });
        await runHandoffs("prune --merged", ctx, { deps: own.recoveryDeps() });
        return dialogs;
      };
      const kept = await run(undefined);
      expect(kept).toEqual([
        {
          kind: "select",
          title: expect.stringMatching(new RegExp(`^Prune these\\?\n  .*${manifest.id}`)),
          body: ["No, prune nothing", "Yes, prune them"],
        },
      ]);
      expect(world()).toEqual(before);
      const pruned = await run("Yes, prune them");
      expect(pruned.at(-1)).toMatchObject({ kind: "notify", title: "info" });
      expect(existsSync(manifest.worktree.path)).toBe(false);
      expect((await own.read(manifest.id)).state).toBe("removed");
      expect(own.repo.run(["for-each-ref", "refs/heads/pr/merged"])).toBe("");
      expect(own.repo.run(["rev-parse", "main"])).toBe(tip);
    } finally {
      await own.cleanup();
    }
  });

  it("prune in the TUI does exactly what it asked about: a handoff merged while the question is open is left for the next prune", async () => {
    const own = await createRecoveryRig();
    try {
      own.repo.run(["config", "user.name", "Prune Test"]);
      own.repo.run(["config", "user.email", "prune-test@example.invalid"]);
      const shown = runningManifest(await own.handoff("pr/shown", { focus: false }));
      const late = runningManifest(await own.handoff("pr/late", { focus: false }));
      await killAndWait(shown.child.pid ?? 0);
      await killAndWait(late.child.pid ?? 0);
      own.repo.commitFile("shown.txt", "merged\n", "pr/shown: work", { cwd: shown.worktree.path });
      own.repo.run(["merge", "--ff-only", "--quiet", "pr/shown"]);
      const lateTip = own.repo.commitFile("late.txt", "later\n", "pr/late: work", { cwd: late.worktree.path });
      const { ctx, dialogs } = scriptedContext({
        select: (_title, options) => {
          // While the question is open, pr/late is merged too: now prune --merged would retire it.
          own.repo.run(["merge", "--no-ff", "--no-edit", "--quiet", "pr/late"]);
          return options.find((option) => option === "Yes, prune them");
        },
      });
      await runHandoffs("prune --merged", ctx, { deps: own.recoveryDeps() });
      expect(dialogs[0]?.title).toMatch(new RegExp(`^Prune these\\?\n  retire handoff ${shown.id}: `));
      expect(dialogs[0]?.title).not.toContain(late.id);
      // What was shown is done, and said as pi-handoff prune says it.
      expect(dialogs.at(-1)).toMatchObject({ kind: "notify", title: "info" });
      expect(dialogs.at(-1)?.body).toMatch(
        new RegExp(`^Pruning:\n  retire handoff ${shown.id}: [^]*\nDone: 1 of 1 action\.$`),
      );
      expect(dialogs.at(-1)?.body).not.toContain(late.id);
      expect(existsSync(shown.worktree.path)).toBe(false);
      expect((await own.read(shown.id)).state).toBe("removed");
      // What was not shown is untouched: its worktree, its branch, its record.
      expect(existsSync(join(late.worktree.path, "late.txt"))).toBe(true);
      expect(own.repo.run(["rev-parse", "refs/heads/pr/late"])).toBe(lateTip);
      expect((await own.read(late.id)).state).not.toBe("removed");
    } finally {
      await own.cleanup();
    }
  });

  it("goes back to the list on Escape in a handoff's menu, and closes only on Escape in the list", async () => {
    const manifest = runningManifest(await rig.handoff("ui/back", { focus: false }));
    let menus = 0;
    const { ctx, dialogs } = scriptedContext({
      select: (title, options) => {
        if (title === "Handoffs") return options.find((option) => option.endsWith(`(${manifest.id})`));
        menus += 1;
        // Escape the first time, then Inspect.
        return menus === 1 ? undefined : "Inspect";
      },
    });
    await runHandoffs("", ctx, { deps: rig.recoveryDeps() });
    // Its Pi runs: "Remove it" is not offered, and the menu says why.
    const menu = `ui/back (${manifest.id})\nRemove: not while its Pi runs (pid ${manifest.child.pid}); quit it first.`;
    expect(dialogs.map((dialog) => [dialog.kind, dialog.title])).toEqual([
      ["select", "Handoffs"],
      ["select", menu],
      ["select", "Handoffs"],
      ["select", menu],
      ["notify", "info"],
    ]);
    expect(dialogs[1]?.body).toEqual(["Switch to its window", "Inspect"]);
    expect(dialogs.at(-1)?.body).toEqual(expect.stringContaining(`Handoff ${manifest.id}\n`));
    await killAndWait(manifest.child.pid ?? 0);
  });

  it("prints the list to stderr in print mode", async () => {
    const manifest = runningManifest(await rig.handoff("ui/printed", { focus: false }));
    let written = "";
    await runHandoffs("", { hasUI: false } as unknown as ExtensionCommandContext, {
      deps: rig.recoveryDeps(),
      writeStderr: (text) => {
        written += text;
      },
    });
    expect(written).toMatch(new RegExp(`^ID +STATUS +CHILD +BRANCH +FLAGS +ACTIONS\\n`));
    expect(written).toMatch(
      new RegExp(
        `\\n${manifest.id} +child running \\(pid ${manifest.child.pid}\\) +idle \\d+[smhd]( \\d+m)? +ui/printed +- +focus \\(quit its Pi to remove\\)\\n`,
      ),
    );
    await killAndWait(manifest.child.pid ?? 0);
  });

  it("relaunches the picked handoff's Pi", async () => {
    const manifest = runningManifest(await rig.handoff("ui/relaunch", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const { ctx, dialogs } = scriptedContext({ select: pick(manifest.id, "Relaunch its Pi") });
    await runHandoffs("", ctx, { deps: rig.recoveryDeps(), piCommand: [NODE_BIN, STAND_IN_PI] });
    // Offered in that order, for a handoff whose Pi is gone and whose window is open.
    expect(dialogs[1]).toEqual({
      kind: "select",
      title: `ui/relaunch (${manifest.id})`,
      body: ["Relaunch its Pi", "Switch to its window", "Inspect", "Remove it"],
    });
    const after = await rig.read(manifest.id);
    expect(after.state).toBe("running");
    expect(isProcessAlive(after.child.pid ?? 0)).toBe(true);
    expect(dialogs.at(-1)).toMatchObject({
      kind: "notify",
      title: "info",
      body: expect.stringMatching(new RegExp(`^Relaunched handoff ${manifest.id}: Pi pid ${after.child.pid} `)),
    });
    await killAndWait(after.child.pid ?? 0);
  });

  it("relaunch --all: every handoff of the repository whose Pi is gone, one line each; again, one line that nothing is to do", async () => {
    // A repository of its own, so the other tests' handoffs are not in it.
    const own = await createRecoveryRig();
    try {
      const made = [
        runningManifest(await own.handoff("all/one", { focus: false })),
        runningManifest(await own.handoff("all/two", { focus: false })),
      ];
      for (const manifest of made) await killAndWait(manifest.child.pid ?? 0);
      const run = async (): Promise<Dialog[]> => {
        const { ctx, dialogs } = scriptedContext({ select: () => undefined });
        await runHandoffs("relaunch --all", { ...ctx, cwd: own.repo.root } as ExtensionCommandContext, {
          deps: own.recoveryDeps(),
          piCommand: [NODE_BIN, STAND_IN_PI],
        });
        return dialogs;
      };
      const first = await run();
      const after = await Promise.all(made.map((manifest) => own.read(manifest.id)));
      const where = (m: (typeof after)[number]) =>
        m.mux.kind === "tmux" ? `tmux window ${m.mux.windowId} (pane ${m.mux.paneId})` : "?";
      expect(first).toEqual([
        {
          kind: "notify",
          title: "info",
          body: [
            ...after.map(
              (m) => `restored  ${m.branch} (${m.id}): Pi pid ${m.child.pid} runs on its session in ${where(m)}.`,
            ),
            `2 handoffs of ${own.repo.root}: 2 restored.`,
          ].join("\n"),
        },
      ]);
      for (const m of after) {
        expect(m.state).toBe("running");
        expect(isProcessAlive(m.child.pid ?? 0)).toBe(true);
      }
      expect(await run()).toEqual([
        {
          kind: "notify",
          title: "info",
          body: `Nothing to relaunch: all 2 handoffs of ${own.repo.root} already run a Pi on their sessions.`,
        },
      ]);
      for (const m of after) await killAndWait(m.child.pid ?? 0);
    } finally {
      await own.cleanup();
    }
  });

  it("removes only after a confirmation that lists the files lost, and not if more would be lost by then", async () => {
    const manifest = runningManifest(await rig.handoff("ui/remove", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const worktree = manifest.worktree.path;
    writeFileSync(join(worktree, "scratch.txt"), "draft\n");

    // Work would be lost for good: only the branch name typed out removes it; Enter alone keeps it.
    const declined = scriptedContext({ select: pick(manifest.id, "Remove it") });
    await runHandoffs("", declined.ctx, { deps: rig.recoveryDeps() });
    expect(declined.dialogs.find((dialog) => dialog.kind === "input")).toEqual({
      kind: "input",
      title: [
        "Remove handoff ui/remove?",
        `The worktree ${worktree} would be deleted and its window closed.`,
        "Would be lost for good (1 file with uncommitted work):",
        "  untracked  scratch.txt",
        "Branch ui/remove would be kept.",
        "That is more than a removal does without --force. To remove it anyway, type ui/remove and press Enter; Enter alone or Escape keeps everything.",
      ].join("\n"),
      body: "",
    });
    expect(readFileSync(join(worktree, "scratch.txt"), "utf8")).toBe("draft\n");
    expect((await rig.read(manifest.id)).state).toBe("running");

    // Confirmed, but another file appeared after the confirmation was shown: cancelled.
    const raced = scriptedContext({
      select: pick(manifest.id, "Remove it"),
      input: () => {
        writeFileSync(join(worktree, "late.txt"), "written after the dialog\n");
        return "ui/remove";
      },
    });
    await runHandoffs("", raced.ctx, { deps: rig.recoveryDeps() });
    expect(raced.dialogs.at(-1)).toEqual({
      kind: "notify",
      title: "error",
      body: `Handoff ${manifest.id} changed since it was shown; nothing was removed.`,
    });
    expect(readFileSync(join(worktree, "late.txt"), "utf8")).toBe("written after the dialog\n");

    // The name typed with everything listed: removed. The branch (nothing unmerged) is offered for
    // deletion separately; Enter there keeps it.
    const confirmed = scriptedContext({ select: pick(manifest.id, "Remove it"), input: () => "ui/remove" });
    await runHandoffs("", confirmed.ctx, { deps: rig.recoveryDeps() });
    expect(confirmed.dialogs.find((dialog) => dialog.kind === "input")?.title).toContain("  untracked  late.txt");
    expect(confirmed.dialogs.at(-2)).toEqual({
      kind: "select",
      title: "Also delete branch ui/remove?\nEverything on it is in HEAD, so no commit is lost.",
      body: ["No, keep the branch", "Yes, delete the branch"],
    });
    expect(confirmed.dialogs.at(-1)).toEqual({
      kind: "notify",
      title: "info",
      body: `Removed handoff ${manifest.id}: deleted worktree ${worktree}, kept branch ui/remove.`,
    });
    expect(existsSync(worktree)).toBe(false);
    expect((await rig.read(manifest.id)).state).toBe("removed");
    expect(rig.repo.run(["rev-parse", "refs/heads/ui/remove"])).toBe(manifest.base.sha);
  });

  it("takes a command and a handoff's name: remove <branch> confirms and removes that one", async () => {
    const manifest = runningManifest(await rig.handoff("ui/args-remove", { focus: false }));
    await killAndWait(manifest.child.pid ?? 0);
    const { ctx, dialogs } = scriptedContext({
      select: (_title, options) => options.find((option) => option === "Yes, remove it") ?? options[0],
    });
    await runHandoffs("remove ui/args-remove", ctx, { deps: rig.recoveryDeps() });
    // No picker: straight to the question of that handoff's removal (nothing is lost: a choice).
    expect(dialogs.map((dialog) => [dialog.kind, dialog.title.split("\n")[0], dialog.body])).toEqual([
      ["select", "Remove handoff ui/args-remove?", ["No, keep it", "Yes, remove it"]],
      ["select", "Also delete branch ui/args-remove?", ["No, keep the branch", "Yes, delete the branch"]],
      ["notify", "info", expect.any(String)],
    ]);
    expect(dialogs.at(-1)?.body).toBe(
      `Removed handoff ${manifest.id}: deleted worktree ${manifest.worktree.path}, kept branch ui/args-remove.`,
    );
    expect((await rig.read(manifest.id)).state).toBe("removed");
  });

  it("inspect, focus and remove --dry-run by id prefix, like pi-handoff, reported here", async () => {
    const manifest = runningManifest(await rig.handoff("ui/args-more", { focus: false }));
    if (manifest.mux.kind !== "tmux") throw new Error("expected tmux");
    await killAndWait(manifest.child.pid ?? 0);
    const prefix = manifest.id.slice(0, -2);
    // `bare`: with the deps the command builds from the environment itself.
    const run = async (line: string, options: { bare?: true } = {}): Promise<Dialog[]> => {
      const { ctx, dialogs } = scriptedContext({ select: () => undefined });
      await runHandoffs(line, ctx, options.bare === true ? undefined : { deps: rig.recoveryDeps() });
      return dialogs;
    };
    const inspected = await run(`inspect ${prefix}`);
    expect(inspected).toEqual([
      { kind: "notify", title: "info", body: expect.stringMatching(new RegExp(`^Handoff ${manifest.id}\n  status: `)) },
    ]);
    expect(await run(`focus "${prefix}"`)).toEqual([
      {
        kind: "notify",
        title: "info",
        body: `Switched to handoff ${manifest.id}: tmux window ${manifest.mux.windowId} (pane ${manifest.mux.paneId}).`,
      },
    ]);
    const dry = await run(`remove ${prefix} --dry-run`);
    expect(dry).toEqual([
      {
        kind: "notify",
        title: "info",
        body: [
          `The worktree ${manifest.worktree.path} would be deleted and its window closed.`,
          "Branch ui/args-more would be kept.",
          "Dry run: nothing was removed.",
        ].join("\n"),
      },
    ]);
    expect(existsSync(manifest.worktree.path)).toBe(true);
    const help = await run("--help");
    expect(help).toHaveLength(1);
    expect(help[0]?.body).toMatch(/^Usage: \/handoffs \[<command> \[<handoff>\] \[options\]\]\n/);
    expect(help[0]?.body).toContain("  focus <handoff>  ");
    expect(help[0]?.body).not.toContain("Usage: pi-handoff");
    // An unusable setting refuses the commands, never the help (as pi-handoff --help).
    process.env.PI_HANDOFF_MUX_TIMEOUT_MS = "soon";
    try {
      expect((await run("--help", { bare: true }))[0]?.body).toBe(help[0]?.body);
      expect(await run("list", { bare: true })).toEqual([
        {
          kind: "notify",
          title: "error",
          body: expect.stringMatching(
            /^\/handoffs: PI_HANDOFF_MUX_TIMEOUT_MS is "soon", but it must be a whole number of milliseconds from 100 to 120000 \(such as 5000\); set it so, or unset it\.$/,
          ),
        },
      ]);
    } finally {
      delete process.env.PI_HANDOFF_MUX_TIMEOUT_MS;
    }
    // Options are checked, never taken as a name.
    expect(await run("list -m tmux")).toEqual([
      { kind: "notify", title: "error", body: '/handoffs list: Unknown option "-m" (see /handoffs --help).' },
    ]);
    expect(await run("remove")).toEqual([
      {
        kind: "notify",
        title: "error",
        body: "/handoffs remove: Name the handoff: its id, the start of its id, or its branch (pi-handoff list or /handoffs shows them).",
      },
    ]);
    expect(await run("remove ui/no-such")).toEqual([
      {
        kind: "notify",
        title: "error",
        body: `/handoffs remove: There is no handoff with id or branch "ui/no-such" in ${rig.store.dir}.`,
      },
    ]);

    // Print mode: no one to confirm, so it is pi-handoff remove itself (the plan first).
    let written = "";
    await runHandoffs(
      `remove ${manifest.id}`,
      { hasUI: false, ui: { setStatus: () => {} } } as unknown as ExtensionCommandContext,
      {
        deps: rig.recoveryDeps(),
        writeStderr: (text) => {
          written += text;
        },
      },
    );
    expect(written).toBe(
      [
        `The worktree ${manifest.worktree.path} will be deleted and its window closed.`,
        "Branch ui/args-more will be kept.",
        `Removed handoff ${manifest.id}: deleted worktree ${manifest.worktree.path}, kept branch ui/args-more.`,
        "",
      ].join("\n"),
    );
    expect(existsSync(manifest.worktree.path)).toBe(false);
  });
});
