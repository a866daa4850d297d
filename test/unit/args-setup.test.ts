/**
 * The worktree-setup flags of /handoff-worktree (--carry[=all], --existing, --fetch) and their
 * help, plus completion of the arguments.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MUX_KINDS } from "../../src/manifest/locations.ts";
import { PROJECT_ROOT } from "../support/pi.ts";
import { HANDOFF_HELP, HANDOFF_USAGE, parseHandoffArgs } from "../../src/handoff/args.ts";
import { completeHandoffArgs, FLAG_COMPLETIONS, type CompletionSource } from "../../src/handoff/completions.ts";

describe("parseHandoffArgs: setup flags", () => {
  it("reads --carry, --carry=all, --existing and --fetch anywhere before the task", () => {
    expect(parseHandoffArgs("b --carry")).toEqual({
      ok: true,
      args: { branch: "b", base: "HEAD", baseGiven: false, focus: true, carry: "tracked" },
    });
    expect(parseHandoffArgs("--carry=all b main -- go")).toEqual({
      ok: true,
      args: { branch: "b", base: "main", baseGiven: true, focus: true, carry: "all", task: "go" },
    });
    expect(parseHandoffArgs("--existing b --fetch")).toEqual({
      ok: true,
      args: { branch: "b", base: "HEAD", baseGiven: false, focus: true, existing: true, fetch: true },
    });
    // After " -- " they are part of the task.
    expect(parseHandoffArgs("b -- use --carry later")).toEqual({
      ok: true,
      args: { branch: "b", base: "HEAD", baseGiven: false, focus: true, task: "use --carry later" },
    });
  });

  it("refuses an unknown --carry value in one sentence", () => {
    expect(parseHandoffArgs("b --carry=some")).toEqual({
      ok: false,
      message: '--carry takes no value or =all, not "some".',
    });
  });

  it("documents every flag in the help and the usage", () => {
    for (const flag of [
      "--carry",
      "--carry=all",
      "--existing",
      "--fetch",
      "--mux",
      "--no-focus",
      "--approve-repo-code",
    ]) {
      expect(HANDOFF_HELP).toContain(`  ${flag}`);
    }
    expect(HANDOFF_USAGE).toBe(
      "/handoff-worktree <branch> [base] [--carry[=all]] [--existing] [--fetch] [--mux tmux|herdr|zellij] [--no-focus] [--approve-repo-code] [-- task]",
    );
    // Named for what it approves (postCreate commands and env variables); the former name still works.
    expect(parseHandoffArgs("b --approve-repo-code")).toMatchObject({ ok: true, args: { approveRepoCode: true } });
    expect(parseHandoffArgs("b --approve-post-create")).toMatchObject({ ok: true, args: { approveRepoCode: true } });
    expect(HANDOFF_HELP).toContain("also taken as --approve-post-create");
  });

  it("the README's synopsis is the usage, whole, and its settings table names every terminal `mux` takes", () => {
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    expect(readme).toContain(`\n${HANDOFF_USAGE}\n`);
    const muxRow = readme.split("\n").find((line) => line.startsWith("| `mux` |"));
    for (const kind of MUX_KINDS) expect(muxRow).toContain(`\`${kind}\``);
  });
});

describe("completeHandoffArgs", () => {
  const source: CompletionSource = {
    refs: async () => ({
      branches: ["main", "feat/login", "feat/busy"],
      remotes: ["origin/main", "origin/feat/login"],
      tags: ["v1.0"],
    }),
    checkedOut: async () => new Set(["main", "feat/busy"]),
  };

  it("completes flags with what they do, the whole argument text as the value", async () => {
    expect(await completeHandoffArgs("feat/x --ca", source)).toEqual([
      { value: "feat/x --carry ", label: "--carry", description: FLAG_COMPLETIONS[0]?.description },
      { value: "feat/x --carry=all ", label: "--carry=all", description: FLAG_COMPLETIONS[1]?.description },
    ]);
    expect(await completeHandoffArgs("feat/x --mux h", source)).toEqual([
      { value: "feat/x --mux herdr ", label: "herdr" },
    ]);
  });

  it("offers branches that are not checked out anywhere for --existing", async () => {
    expect(await completeHandoffArgs("--existing feat/", source)).toEqual([
      { value: "--existing feat/login ", label: "feat/login", description: "existing branch" },
    ]);
  });

  it("offers refs for the base, nothing for a new branch name, nothing inside the task", async () => {
    expect(await completeHandoffArgs("feat/x --carry or", source)).toEqual([
      { value: "feat/x --carry origin/main ", label: "origin/main", description: "remote branch" },
      { value: "feat/x --carry origin/feat/login ", label: "origin/feat/login", description: "remote branch" },
    ]);
    expect(await completeHandoffArgs("feat/x v", source)).toEqual([
      { value: "feat/x v1.0 ", label: "v1.0", description: "tag" },
    ]);
    expect(await completeHandoffArgs("fe", source)).toBeNull();
    expect(await completeHandoffArgs("feat/x main -- fix ma", source)).toBeNull();
    expect(await completeHandoffArgs("--existing feat/login ma", source)).toBeNull();
  });

  it("offers nothing for a word typed out whole, so Enter runs the command", async () => {
    expect(await completeHandoffArgs("feat/two --no-focus", source)).toBeNull();
    // Not --carry=all either: Enter would accept it in place of what was typed.
    expect(await completeHandoffArgs("feat/x --carry", source)).toBeNull();
    expect(await completeHandoffArgs("feat/x --mux tmux", source)).toBeNull();
    expect(await completeHandoffArgs("feat/x main", source)).toBeNull();
    expect(await completeHandoffArgs("feat/x origin/main", source)).toBeNull();
    expect(await completeHandoffArgs("--existing feat/login", source)).toBeNull();
    // One more character still completes.
    expect((await completeHandoffArgs("feat/x --no-focu", source))?.map((item) => item.label)).toEqual(["--no-focus"]);
  });

  it("offers nothing when git cannot be asked", async () => {
    const failing: CompletionSource = {
      refs: async () => Promise.reject(new Error("no repo")),
      checkedOut: async () => new Set(),
    };
    expect(await completeHandoffArgs("feat/x ma", failing)).toBeNull();
  });
});
