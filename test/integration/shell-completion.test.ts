/**
 * `pi-handoff completion bash|zsh|fish`, loaded into the real shell and asked what it completes:
 * bash through `complete -p` and the function with COMP_WORDS/COMP_CWORD, zsh with its `compadd`
 * recording the words offered, fish through `complete -C`. The commands and options come from the
 * one grammar (src/cli/command-line.ts), the handoff names from the store, through the real
 * `bin/pi-handoff.mjs` on PATH. Branches and handoffs named with shell metacharacters (a real git
 * repository's, the hostile-words corpus) are offered exactly and run nothing: through the functions
 * (each shell), and by a real Tab then Enter typed into each shell in a private tmux.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { shellQuote } from "../../src/child/launch-command.ts";
import { newManifest } from "../../src/manifest/factory.ts";
import { ManifestStore } from "../../src/manifest/store.ts";
import { RECOVERY_COMMANDS, RECOVERY_OPTIONS } from "../../src/cli/command-line.ts";
import { completionScript, QUOTE_FOR, SHELLS, valuedOptions, VALUE_KINDS } from "../../src/cli/shell-completion.ts";
import { createTempRepo, makeTempDir, removeTempDir, type TempRepo } from "../support/git-repo.ts";
import { hostileWords, metacharacterWords } from "../support/hostile-words.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";
import { startPrivateTmux, waitFor, type PrivateTmux } from "../support/tmux.ts";

let dir: string;
let env: Record<string, string>;
let scripts: Record<"bash" | "zsh" | "fish", string>;

beforeAll(async () => {
  dir = makeTempDir("phw-completion-");
  const agentDir = join(dir, "agent");
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  // `pi-handoff` on PATH, as an install puts it: the real launcher, run by the project's Node.
  writeFileSync(
    join(bin, "pi-handoff"),
    `#!/bin/sh\nexec '${NODE_BIN}' '${join(PROJECT_ROOT, "bin", "pi-handoff.mjs")}' "$@"\n`,
    { mode: 0o755 },
  );
  symlinkSync(NODE_BIN, join(bin, "node"));
  env = {
    PATH: `${bin}:/usr/bin:/bin`,
    HOME: dir,
    PI_CODING_AGENT_DIR: agentDir,
    XDG_CONFIG_HOME: join(dir, "config"),
  };
  await createHandoffs(agentDir, [
    ["20260101-000000-feat-login-0001", "feat/login", false],
    ["20260101-000001-fix-typo-0002", "fix/typo", false],
    ["20260101-000002-old-0003", "feat/old", true],
  ]);
  scripts = { bash: completionScript("bash"), zsh: completionScript("zsh"), fish: completionScript("fish") };
  for (const [shell, text] of Object.entries(scripts)) writeFileSync(join(dir, `completion.${shell}`), text);
});
afterAll(() => {
  if (dir !== undefined) removeTempDir(dir);
});

/** Handoffs `[id, branch, removed]` in the store of `agentDir`, all made at one time. */
async function createHandoffs(agentDir: string, handoffs: ReadonlyArray<readonly [string, string, boolean]>) {
  const store = ManifestStore.forAgentDir(agentDir);
  const at = new Date("2026-01-01T00:00:00.000Z");
  for (const [id, branch, removed] of handoffs) {
    const manifest = newManifest({
      id,
      now: at,
      branch,
      base: { ref: "HEAD", sha: "a".repeat(40) },
      repo: { root: join(dir, "repo"), commonDir: join(dir, "repo", ".git") },
      parent: { sessionFile: join(dir, "parent.jsonl"), sessionId: "p", leafId: "abcd1234", cwd: join(dir, "repo") },
      worktree: { path: join(dir, "repo.worktrees", id) },
      mux: { kind: "tmux", socketPath: join(dir, "tmux.sock") },
    });
    await store.create(removed ? { ...manifest, state: "removed" } : manifest);
  }
}

/** Where a shell runs: its directory and environment (the first store's, in `dir`, by default). */
interface Place {
  cwd: string;
  env: Record<string, string>;
  /** The file a name's command would create if anything ran it. */
  marker?: string;
}

function run(shell: string, args: string[], place: Place = { cwd: dir, env }): string {
  const result = spawnSync(shell, args, { env: place.env, encoding: "utf8", timeout: 60_000, cwd: place.cwd });
  if (result.status !== 0) throw new Error(`${shell} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

const splitNul = (output: string): string[] => (output === "" ? [] : output.slice(0, -1).split("\0"));

/** What the bash function offers for the words typed (the last one is being completed). */
function bash(words: string[], place?: Place): string[] {
  const script = [
    `source ${join(dir, "completion.bash")}`,
    `COMP_WORDS=(${words.map(shellQuote).join(" ")})`,
    `COMP_CWORD=${words.length - 1}`,
    "_pi_handoff",
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join("\n");
  return run("bash", ["--norc", "--noprofile", "-c", script], place).split("\n").filter(Boolean);
}

/**
 * The words bash reads back from each reply of the function, as it would once readline inserts the
 * reply and Enter is pressed (`open`: the quote the typed word starts with, which readline keeps and
 * closes around the reply).
 */
function bashInserted(words: string[], place: Place, open: "" | "'" | '"' = ""): string[] {
  const marker = place.marker ?? join(dir, "pwned");
  const script = [
    `source ${join(dir, "completion.bash")}`,
    `COMP_WORDS=(${words.map(shellQuote).join(" ")})`,
    `COMP_CWORD=${words.length - 1}`,
    "_pi_handoff",
    // Completing ran nothing (the reading back below would run an unquoted reply, and is checked after).
    `[[ -e ${shellQuote(marker)} ]] && { echo "completing ran a name" >&2; exit 3; }`,
    // The quote goes around the reply in a variable, so the harness adds no quoting of its own.
    `quote=${shellQuote(open)}`,
    `for reply in "\${COMPREPLY[@]}"; do line=$quote$reply$quote; eval "printf '%s\\0' $line"; done`,
  ].join("\n");
  return splitNul(run("bash", ["--norc", "--noprofile", "-c", script], place));
}

/** What the zsh function offers: `compadd` records the words after `--` (zsh's own `_files` is not loaded here). */
function zsh(words: string[], place?: Place, userOptions?: string): string[] {
  const script = [
    ...(userOptions === undefined ? [] : [`setopt ${userOptions}`]),
    `compadd() { while [[ $1 != -- && $# -gt 0 ]]; do shift; done; shift; printf "%s\\0" "$@"; }`,
    `source ${join(dir, "completion.zsh")}`,
    `words=(${words.map(shellQuote).join(" ")})`,
    `CURRENT=${words.length}`,
    "_pi_handoff",
  ].join("\n");
  return splitNul(run("zsh", ["-f", "-c", script], place));
}

/** What fish offers for a command line (`complete -C`), without the descriptions. */
function fish(line: string, place?: Place): string[] {
  const script = `source ${join(dir, "completion.fish")}; complete -C ${QUOTE_FOR.fish(line)}`;
  return run("fish", ["--no-config", "-c", script], place)
    .split("\n")
    .filter(Boolean)
    .map((entry) => entry.split("\t")[0] ?? "");
}

describe("pi-handoff completion", () => {
  it("is printed by the CLI for each shell, and refuses any other in one sentence", () => {
    const cli = (args: string[]) =>
      spawnSync("pi-handoff", args, { env, encoding: "utf8", timeout: 60_000, cwd: dir, shell: false });
    expect(cli(["completion", "bash"]).stdout).toBe(scripts.bash);
    expect(cli(["completion", "zsh"]).stdout).toBe(scripts.zsh);
    expect(cli(["completion", "fish"]).stdout).toBe(scripts.fish);
    const refused = cli(["completion", "tcsh"]);
    expect([refused.status, refused.stdout, refused.stderr]).toEqual([
      2,
      "",
      'pi-handoff: completion takes one of bash, zsh, fish, not "tcsh" (see pi-handoff --help).\n',
    ]);
    expect(cli(["completion", "handoffs"]).stdout).toBe(
      "fix/typo\n20260101-000001-fix-typo-0002\nfeat/login\n20260101-000000-feat-login-0001\n",
    );
  });

  it("gives every value-taking option of the grammar a kind of value", () => {
    expect(valuedOptions().sort()).toEqual(Object.keys(VALUE_KINDS).sort());
  });

  it("bash: registered for pi-handoff; commands, each command's options, values and handoff names", () => {
    expect(
      run("bash", ["--norc", "--noprofile", "-c", `source ${join(dir, "completion.bash")}; complete -p pi-handoff`]),
    ).toBe("complete -F _pi_handoff pi-handoff\n");
    expect(bash(["pi-handoff", ""])).toEqual([...RECOVERY_COMMANDS, "completion", "--help", "--version"]);
    expect(bash(["pi-handoff", "re"])).toEqual(["relaunch", "remove", "rebase"]);
    expect(bash(["pi-handoff", "remove", "--"])).toEqual([
      ...Object.keys(RECOVERY_OPTIONS.remove).map((name) => `--${name}`),
      "--help",
    ]);
    expect(bash(["pi-handoff", "land", "x", "--strategy", ""])).toEqual(["ff", "rebase", "merge", "squash"]);
    expect(bash(["pi-handoff", "completion", ""])).toEqual(["bash", "zsh", "fish"]);
    // Names from the store, newest first, never a removed one; none once a handoff is named.
    expect(bash(["pi-handoff", "inspect", ""])).toEqual([
      "fix/typo",
      "20260101-000001-fix-typo-0002",
      "feat/login",
      "20260101-000000-feat-login-0001",
    ]);
    expect(bash(["pi-handoff", "land", "--into", "main", "feat/"])).toEqual(["feat/login"]);
    expect(bash(["pi-handoff", "remove", "feat/login", ""])).toEqual([]);
    expect(bash(["pi-handoff", "list", ""])).toEqual([]);
  });

  it("zsh: the same words", () => {
    // zsh matches the typed start itself: every word is handed over.
    expect(zsh(["pi-handoff", "re"])).toEqual([...RECOVERY_COMMANDS, "completion", "--help", "--version"]);
    expect(zsh(["pi-handoff", "remove", "--"])).toEqual([
      ...Object.keys(RECOVERY_OPTIONS.remove).map((name) => `--${name}`),
      "--help",
    ]);
    expect(zsh(["pi-handoff", "land", "x", "--strategy", ""])).toEqual(["ff", "rebase", "merge", "squash"]);
    expect(zsh(["pi-handoff", "focus", ""])).toEqual([
      "fix/typo",
      "20260101-000001-fix-typo-0002",
      "feat/login",
      "20260101-000000-feat-login-0001",
    ]);
    expect(zsh(["pi-handoff", "remove", "feat/login", ""])).toEqual([]);
  });

  it("fish: the same words", () => {
    expect(fish("pi-handoff re")).toEqual(["rebase", "relaunch", "remove"]);
    expect(fish("pi-handoff remove --").sort()).toEqual(
      [...Object.keys(RECOVERY_OPTIONS.remove).map((name) => `--${name}`)].sort(),
    );
    expect(fish("pi-handoff land x --strategy ")).toEqual(["ff", "merge", "rebase", "squash"]);
    expect(fish("pi-handoff relaunch f").sort()).toEqual(["feat/login", "fix/typo"]);
  });
});

describe("pi-handoff's unknown-command message", () => {
  it("names completion among the commands, and suggests it for a near miss", () => {
    const cli = (args: string[]) => spawnSync("pi-handoff", args, { env, encoding: "utf8", timeout: 60_000, cwd: dir });
    const commands = [...RECOVERY_COMMANDS, "completion"].join(", ");
    const unknown = cli(["frobnicate"]);
    expect([unknown.status, unknown.stdout, unknown.stderr]).toEqual([
      2,
      "",
      `pi-handoff: "frobnicate" is not a command; the commands are ${commands} (see pi-handoff --help).\n`,
    ]);
    const near = cli(["completon", "bash"]);
    expect([near.status, near.stdout, near.stderr]).toEqual([
      2,
      "",
      `pi-handoff: "completon" is not a command: did you mean completion (the commands are ${commands}; see pi-handoff --help)?\n`,
    ]);
  });
});

describe("names with shell metacharacters: offered exactly, never run", () => {
  let repo: TempRepo;
  let marker: string;
  let place: Place;
  /** The branches of the repository, as git lists them. */
  let branches: string[];
  let dollar: string;
  let backtick: string;
  const HANDOFF_IDS = ["20260102-000000-dollar-0001", "20260102-000001-backtick-0002", "20260102-000002-plain-0003"];

  beforeAll(async () => {
    repo = createTempRepo({ prefix: "phw-completion-names-" });
    // The file a name's command would create if a shell ever ran it (no space: it sits inside branch names).
    marker = join(repo.dir, "pwned");
    dollar = `feat/$(touch\${IFS}${marker})`;
    backtick = `feat/\`touch\${IFS}${marker}\``;
    // The corpus, made into branch names (a space cannot be one: `${IFS}` stands for it), and a few more;
    // only those git accepts, which must include the two that would run a command.
    const candidates = [
      ...hostileWords(marker).map((word) => `feat/${word.replaceAll(" ", "${IFS}")}`),
      "feat/=eq(x)",
      "feat/<in>out",
      "feat/{a,b}",
      "fix/plain",
      // zsh globs a name under the user's GLOB_SUBST, and a glob qualifier runs code (`<->` matches the file `1`).
      `<->(e+touch\${IFS}${marker}+)`,
    ];
    const accepted = candidates.filter(
      (name) =>
        spawnSync("git", ["check-ref-format", "--branch", name], { env: repo.env, timeout: 30_000 }).status === 0,
    );
    expect(accepted).toEqual(expect.arrayContaining([dollar, backtick, candidates.at(-1)]));
    for (const name of accepted) repo.run(["branch", "--", name]);
    writeFileSync(join(repo.root, "1"), "");
    branches = repo.run(["for-each-ref", "--format=%(refname:short)", "refs/heads"]).split("\n");
    expect(branches).toEqual([...accepted, "main"].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
    const agentDir = join(repo.dir, "agent");
    await createHandoffs(agentDir, [
      [HANDOFF_IDS[0] ?? "", dollar, false],
      [HANDOFF_IDS[1] ?? "", backtick, false],
      [HANDOFF_IDS[2] ?? "", "fix/plain", false],
    ]);
    place = { cwd: repo.root, env: { ...env, PI_CODING_AGENT_DIR: agentDir, HOME: repo.home }, marker };
  });
  afterAll(() => {
    repo?.cleanup();
  });

  // Each test says for itself whether it ran a name.
  beforeEach(() => {
    rmSync(marker, { force: true });
  });

  const handoffNames = (): string[] =>
    ["fix/plain", HANDOFF_IDS[2], backtick, HANDOFF_IDS[1], dollar, HANDOFF_IDS[0]].map(String);

  it("the quoting function of each shell gives back every word of the corpus, and runs none", () => {
    // Every ASCII metacharacter, control characters and non-ASCII too (the sh quoter's own test: sh-quote.test.ts).
    const words = [...hostileWords(marker), ...metacharacterWords(marker)];
    const invocations = { bash: ["--norc", "--noprofile", "-c"], zsh: ["-f", "-c"], fish: ["--no-config", "-c"] };
    for (const shell of SHELLS) {
      const script = `printf '%s\\0' ${words.map(QUOTE_FOR[shell]).join(" ")}`;
      expect([shell, splitNul(run(shell, [...invocations[shell], script], place))]).toEqual([shell, words]);
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("bash: a reply, inserted where it goes (bare, in single or in double quotes), reads back as the word", () => {
    // The script's own run-time quoting, for every word of the corpus and each place the typed word can be in.
    const words = hostileWords(marker).filter((word) => word !== "");
    for (const open of ["", "'", '"'] as const) {
      const script = [
        `source ${join(dir, "completion.bash")}`,
        `for word in ${words.map(shellQuote).join(" ")}; do`,
        `  COMPREPLY=(); _pi_handoff_dequote ${shellQuote(open)}; _pi_handoff_offer "$word"`,
        `  line=${shellQuote(open)}\${COMPREPLY[0]}${shellQuote(open)}; eval "printf '%s\\\\0' $line"`,
        "done",
      ].join("\n");
      expect([open, splitNul(run("bash", ["--norc", "--noprofile", "-c", script], place))]).toEqual([open, words]);
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("bash: every branch and handoff is offered, quoted so the shell reads it back exactly; nothing runs", () => {
    expect(bashInserted(["pi-handoff", "land", "x", "--into", ""], place)).toEqual(branches);
    expect(bashInserted(["pi-handoff", "inspect", ""], place)).toEqual(handoffNames());
    // The typed start is compared as a string, its quoting removed: backslashes, an open single or double quote.
    const startingWith = (start: string) => branches.filter((name) => name.startsWith(start));
    expect(startingWith("feat/$(")).toEqual([dollar]);
    expect(bashInserted(["pi-handoff", "land", "x", "--into", "feat/\\$\\("], place)).toEqual([dollar]);
    expect(bashInserted(["pi-handoff", "land", "x", "--into", "'feat/$("], place, "'")).toEqual([dollar]);
    expect(bashInserted(["pi-handoff", "land", "x", "--into", '"feat/\\`'], place, '"')).toEqual([backtick]);
    expect(bashInserted(["pi-handoff", "land", "x", "--into", "feat/\\$"], place)).toEqual(startingWith("feat/$"));
    expect(bashInserted(["pi-handoff", "land", "x", "--into", "fix"], place)).toEqual(["fix/plain"]);
    expect(bashInserted(["pi-handoff", "inspect", "20260102-000001"], place)).toEqual([HANDOFF_IDS[1]]);
    expect(bashInserted(["pi-handoff", "land", "x", "--into", "nothing"], place)).toEqual([]);
    expect(existsSync(marker)).toBe(false);
  });

  it("zsh: every branch and handoff is handed to compadd as one word each, whatever the user's options; nothing runs", () => {
    expect(zsh(["pi-handoff", "land", "x", "--into", ""], place)).toEqual(branches);
    expect(zsh(["pi-handoff", "inspect", ""], place)).toEqual(handoffNames());
    expect(existsSync(marker)).toBe(false);
    // Options a user may have set, which would glob and split a name expanded unquoted.
    const options = "globsubst shwordsplit";
    expect([zsh(["pi-handoff", "land", "x", "--into", ""], place, options), existsSync(marker)]).toEqual([
      branches,
      false,
    ]);
    expect(zsh(["pi-handoff", "inspect", ""], place, options)).toEqual(handoffNames());
  });

  it("fish: every branch and handoff is offered as it is, and the typed start filters them; nothing runs", () => {
    expect(fish("pi-handoff land x --into ", place).sort()).toEqual([...branches].sort());
    expect(fish("pi-handoff inspect ", place).sort()).toEqual(handoffNames().sort());
    expect(fish("pi-handoff land x --into feat/\\$\\(", place)).toEqual([dollar]);
    expect(fish("pi-handoff inspect fix", place)).toEqual(["fix/plain"]);
    expect(existsSync(marker)).toBe(false);
  });

  describe("a real Tab, then Enter, in each shell", () => {
    let tmux: PrivateTmux;
    let record: string;

    beforeAll(async () => {
      const bin = join(repo.dir, "recording-bin");
      record = join(repo.dir, "arguments");
      mkdirSync(bin);
      // `pi-handoff completion ...` is the real one; any other command records its arguments, NUL-separated.
      writeFileSync(
        join(bin, "pi-handoff"),
        [
          "#!/bin/sh",
          `[ "$1" = completion ] && exec ${shellQuote(NODE_BIN)} ${shellQuote(join(PROJECT_ROOT, "bin", "pi-handoff.mjs"))} "$@"`,
          `printf '%s\\0' "$@" > ${shellQuote(record)}`,
          "",
        ].join("\n"),
        { mode: 0o755 },
      );
      tmux = await startPrivateTmux({
        env: {
          PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}`,
          PI_CODING_AGENT_DIR: place.env.PI_CODING_AGENT_DIR ?? "",
        },
      });
    });
    afterAll(async () => {
      await tmux?.kill();
    });

    const START: Record<(typeof SHELLS)[number], { command: string; load: string }> = {
      bash: { command: "bash --norc --noprofile -i", load: "source" },
      zsh: { command: "zsh -f -i", load: "autoload -U compinit && compinit -u && source" },
      fish: { command: "fish --no-config -i", load: "source" },
    };

    /** Types `line` into a new interactive `shell` with the completion loaded, presses Tab, waits for `completed` to show, presses Enter; returns the arguments pi-handoff got. */
    async function tabThenEnter(shell: (typeof SHELLS)[number], line: string, completed: string): Promise<string[]> {
      rmSync(record, { force: true });
      const pane = (
        await tmux.tmux(["new-window", "-P", "-F", "#{pane_id}", "-c", repo.root, START[shell].command])
      ).trim();
      try {
        await tmux.tmux([
          "send-keys",
          "-t",
          pane,
          "-l",
          `${START[shell].load} ${join(dir, `completion.${shell}`)}; echo RE""ADY`,
        ]);
        await tmux.tmux(["send-keys", "-t", pane, "Enter"]);
        await waitFor(async () => /^READY$/m.test(await tmux.capturePane(pane)), {
          timeoutMs: 30_000,
          description: `${shell} to load the completion`,
        });
        await tmux.tmux(["send-keys", "-t", pane, "-l", line]);
        await tmux.tmux(["send-keys", "-t", pane, "Tab"]);
        await waitFor(async () => (await tmux.capturePane(pane)).includes(completed), {
          timeoutMs: 30_000,
          description: `${shell} to complete ${JSON.stringify(line)} with ${JSON.stringify(completed)}`,
        });
        await tmux.tmux(["send-keys", "-t", pane, "Enter"]);
        await waitFor(() => existsSync(record) && readFileSync(record, "utf8").endsWith("\0"), {
          timeoutMs: 30_000,
          description: `${shell} to run pi-handoff`,
        });
        return splitNul(readFileSync(record, "utf8"));
      } finally {
        await tmux.tmux(["kill-pane", "-t", pane]);
      }
    }

    it.each(SHELLS)("%s: the one matching name is inserted whole, and the command gets it exactly", async (shell) => {
      // The typed start quotes `$(` as each shell reads it; what Tab adds ends with the marker's name.
      expect(await tabThenEnter(shell, "pi-handoff land x --into feat/\\$\\(", "pwned")).toEqual([
        "land",
        "x",
        "--into",
        dollar,
      ]);
      expect(await tabThenEnter(shell, "pi-handoff inspect 'feat/`", "pwned")).toEqual(["inspect", backtick]);
      expect(existsSync(marker)).toBe(false);
    });
  });
});
