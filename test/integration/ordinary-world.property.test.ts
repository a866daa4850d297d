/**
 * The ordinary world, generated (issue 41): random small histories on real git, with the ordinary
 * things that happen to a user's files between the steps (touched, aged so that git trusts its index
 * stat data, re-written with the same bytes, hard-linked, chmod-ed, edited, staged, new untracked
 * files, a sibling that lands first, the child committing meanwhile), and `pi-handoff` run as the user
 * runs it (the CLI's `main`, in process) for land, rebase, remove and prune, each first with
 * `--dry-run`. After every step:
 * - a dry run predicts the real run: the same exit code, and a refusal for the same reason;
 * - a refusal changes nothing git holds (refs, HEADs, index entries, files and their modes);
 * - no uncommitted or staged work is lost (nothing here passes `--force`), in the child's worktree
 *   and in the main checkout;
 * - the child's commits survive: what they changed is at the branch's tip after a rebase, at the
 *   target's after a landing, and a removal keeps the branch (or it was merged);
 * - what `list --json` says equals what git holds (tip, ahead, behind, uncommitted files).
 * Seeded: `npm test` runs a few fixed-seed cases; `npm run test:soak` runs many with a fresh seed
 * (PI_HANDOFF_PROPERTY_RUNS, PI_HANDOFF_PROPERTY_SEED). fast-check prints the seed and the case
 * on failure.
 */
import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { main } from "../../src/cli/cli.ts";
import { createLandRig, type LandRig } from "../support/land-rig.ts";

const RUNS = Number(process.env.PI_HANDOFF_PROPERTY_RUNS ?? "3");
const SEED = Number(process.env.PI_HANDOFF_PROPERTY_SEED ?? (process.env.PI_HANDOFF_PROPERTY_RUNS ? Date.now() : 41));

const BRANCHES = [
  "feat/plain",
  "feat/$(touch${IFS}pwned)",
  "feat/`id`;echo&x|y",
  'feat/it\'s"quoted"',
  "feat/#hash!bang{1}",
  "feat/ünïcode-ü",
  "feat/<a>(b)",
];
const TRACKED = ["README.md", "file-1.txt"] as const;
const CONTENTS = ["one\n", "two\n", "three\n"] as const;

type Where = "worktree" | "main";
type Perturbation = "touch" | "age" | "same_bytes" | "same_bytes_new_inode" | "hardlink" | "chmod" | "edit" | "stage";
type Step =
  | { kind: "child_commits"; file: string; content: string }
  | { kind: "child_commits_all" }
  | { kind: "main_commits"; file: string; content: string }
  | { kind: "settle" }
  | { kind: "perturb"; where: Where; file: string; how: Perturbation }
  | { kind: "untracked"; where: Where }
  | { kind: "sibling_lands"; file: string; content: string }
  | { kind: "rebase" }
  | { kind: "land"; strategy: "ff" | "rebase" | "merge" | "squash" | "default" }
  | { kind: "remove"; deleteBranch: boolean }
  | { kind: "prune" };

const SETTLES_AFTER = new Set<Step["kind"]>([
  "child_commits",
  "child_commits_all",
  "main_commits",
  "sibling_lands",
  "rebase",
  "land",
]);
const OPERATIONS = new Set<Step["kind"]>(["rebase", "land", "remove", "prune", "sibling_lands"]);
const anyFile = fc.constantFrom(...TRACKED, "c.txt", "sub/d.txt");
const anyContent = fc.constantFrom(...CONTENTS);
const where = fc.constantFrom<Where>("worktree", "main");
/** What happens to files between two commands: mostly harmless to git's eyes, sometimes real work. */
const perturbationArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("perturb" as const),
      where,
      file: fc.constantFrom(...TRACKED),
      how: fc.constantFrom<Perturbation>("touch", "age", "same_bytes", "same_bytes_new_inode", "hardlink"),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("perturb" as const),
      where,
      file: fc.constantFrom(...TRACKED),
      how: fc.constantFrom<Perturbation>("chmod", "edit", "stage"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("untracked" as const), where }) },
  { weight: 2, arbitrary: fc.constant({ kind: "settle" as const }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("child_commits" as const), file: anyFile, content: anyContent }),
  },
  // The child's Pi commits whatever it has, as an agent does at the end of a turn.
  { weight: 2, arbitrary: fc.constant({ kind: "child_commits_all" as const }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("main_commits" as const), file: anyFile, content: anyContent }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("sibling_lands" as const), file: anyFile, content: anyContent }),
  },
);
const operationArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: "rebase" as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("land" as const),
      strategy: fc.constantFrom(
        "ff" as const,
        "rebase" as const,
        "merge" as const,
        "squash" as const,
        "default" as const,
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("remove" as const), deleteBranch: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: "prune" as const }) },
);
/** A round: what happens to the files, then a command run on them. */
const roundArb = fc
  .tuple(fc.array(perturbationArb, { maxLength: 3 }), operationArb)
  .map(([before, operation]) => [...before, operation]);
const scenarioArb = fc.record({
  branch: fc.constantFrom(...BRANCHES),
  // The child has worked and the base moved on (often in a file the child's checkout holds) before
  // anything else happens: what every handoff that matters has met.
  first: fc.tuple(
    fc.record({
      kind: fc.constant("child_commits" as const),
      file: fc.constantFrom("README.md", "c.txt", "sub/d.txt"),
      content: anyContent,
    }),
    fc.record({
      kind: fc.constant("main_commits" as const),
      file: fc.constantFrom("file-1.txt", "file-1.txt", "README.md", "m.txt"),
      content: anyContent,
    }),
  ),
  rounds: fc.array(roundArb, { minLength: 1, maxLength: 4 }),
});

type Scenario = typeof scenarioArb extends fc.Arbitrary<infer T> ? T : never;

/**
 * Cases the generator found, run first every time: the base moved on in a file the child's checkout
 * holds, and time passed (the rebase's backup hard-linked the file, git's plumbing then refused).
 */
const FOUND: Array<[Scenario]> = [
  [
    {
      branch: "feat/<a>(b)",
      first: [
        { kind: "child_commits", file: "sub/d.txt", content: "three\n" },
        { kind: "main_commits", file: "README.md", content: "two\n" },
      ],
      rounds: [
        [
          { kind: "perturb", where: "main", file: "file-1.txt", how: "edit" },
          { kind: "child_commits_all" },
          { kind: "rebase" },
        ],
      ],
    },
  ],
];

let rig: LandRig | undefined;

afterEach(() => {
  rig?.cleanup();
  rig = undefined;
});

describe("the ordinary world, generated", () => {
  it(
    "land, rebase, remove and prune lose nothing, dry runs predict real runs, and list tells what git holds",
    async () => {
      await fc.assert(
        fc.asyncProperty(scenarioArb, async (scenario) => {
          rig?.cleanup();
          rig = await createLandRig({ branch: scenario.branch });
          await runScenario(rig, [...scenario.first, ...scenario.rounds.flat()]);
        }),
        { seed: SEED, numRuns: RUNS, endOnFailure: true, examples: FOUND },
      );
    },
    Math.max(120_000, RUNS * 20_000),
  );
});

async function runScenario(r: LandRig, steps: readonly Step[]): Promise<void> {
  let sibling = 0;
  let untracked = 0;
  for (const [index, step] of steps.entries()) {
    const context = `step ${index + 1} ${JSON.stringify(step)}`;
    const checkout = (where: Where): string | undefined =>
      where === "main" ? r.repo.root : existsSync(r.worktree) ? r.worktree : undefined;
    const started = Date.now();
    if (process.env.PI_HANDOFF_PROPERTY_TRACE) process.stderr.write(`${context}\n`);
    switch (step.kind) {
      case "child_commits": {
        // The child commits only on a clean worktree of its branch, as its Pi would after a turn.
        if (!existsSync(r.worktree) || !isClean(r, r.worktree)) break;
        r.commitInWorktree(step.file, `${step.content}child ${index}\n`, `child ${index}`);
        break;
      }
      case "child_commits_all": {
        if (!existsSync(r.worktree) || isClean(r, r.worktree)) break;
        r.repo.run(["add", "--all"], { cwd: r.worktree });
        r.repo.run(["commit", "--quiet", "--no-verify", "-m", `child's turn ${index}`], { cwd: r.worktree });
        break;
      }
      case "main_commits": {
        if (!isClean(r, r.repo.root)) break;
        r.repo.commitFile(step.file, `${step.content}main ${index}\n`, `main ${index}`);
        break;
      }
      case "settle":
        settle(r);
        break;
      case "perturb": {
        const root = checkout(step.where);
        if (root === undefined || !existsSync(join(root, step.file))) break;
        perturb(r, root, step.file, step.how, index);
        break;
      }
      case "untracked": {
        const root = checkout(step.where);
        if (root !== undefined) writeFileSync(join(root, `untracked-${(untracked += 1)}.txt`), "draft\n");
        break;
      }
      case "sibling_lands": {
        if (!isClean(r, r.repo.root)) break;
        const made = await r.addHandoff(`feat/sibling-${(sibling += 1)}`);
        r.repo.commitFile(step.file, `${step.content}sibling ${index}\n`, `sibling ${index}`, { cwd: made.worktree });
        const landed = await cli(r, ["land", made.id]);
        expect(landed.code, `${context}: the sibling lands\n${landed.err}`).toBe(0);
        break;
      }
      case "rebase":
        await checkedOperation(r, context, ["rebase", r.id]);
        break;
      case "land":
        await checkedOperation(r, context, [
          "land",
          r.id,
          ...(step.strategy === "default" ? [] : ["--strategy", step.strategy]),
        ]);
        break;
      case "remove":
        await checkedOperation(r, context, ["remove", r.id, ...(step.deleteBranch ? ["--delete-branch"] : [])]);
        break;
      case "prune":
        await checkedOperation(r, context, ["prune"]);
        break;
    }
    // Time passes after whatever wrote files, as it does for a user: git then trusts its stat data.
    if (SETTLES_AFTER.has(step.kind)) settle(r);
    const listed = Date.now();
    if (OPERATIONS.has(step.kind) || index === steps.length - 1) await expectListTellsGit(r, context);
    if (process.env.PI_HANDOFF_PROPERTY_TRACE)
      process.stderr.write(`  ${listed - started} ms, list ${Date.now() - listed} ms\n`);
  }
}

/** Runs `args` with `--dry-run`, then for real, and checks every invariant of the header. */
async function checkedOperation(r: LandRig, context: string, args: readonly string[]): Promise<void> {
  const before = worldOf(r);
  const pending = uncommittedWork(r);
  const work = childWork(r);
  const dry = await cli(r, [...args, "--dry-run"]);
  expect(worldOf(r), `${context}: the dry run changed something\n${dry.out}${dry.err}`).toEqual(before);
  const real = await cli(r, args);
  if (process.env.PI_HANDOFF_PROPERTY_TRACE)
    process.stderr.write(
      `  ${args.join(" ")}: dry ${dry.code}, real ${real.code} ${firstSentence(real.err || real.out)}\n`,
    );
  const said = `\ndry run (${dry.code}):\n${dry.out}${dry.err}\nreal run (${real.code}):\n${real.out}${real.err}`;
  expect(real.code, `${context}: the dry run did not predict the real run${said}`).toBe(dry.code);
  if (real.code !== 0) {
    expect(firstSentence(real.err), `${context}: refused for another reason${said}`).toBe(firstSentence(dry.err));
    expect(worldOf(r), `${context}: a refusal changed something${said}`).toEqual(before);
  }
  for (const [where, files] of pending) {
    for (const [file, bytes] of files) {
      expect(workAt(r, where, file), `${context}: uncommitted ${file} in ${where} was lost${said}`).toBe(bytes);
    }
  }
  if (real.code !== 0 || work === undefined) return;
  const tip = refOf(r, `refs/heads/${r.branch}`);
  const target = refOf(r, "refs/heads/main");
  const holds = (commit: string | undefined): boolean =>
    commit !== undefined && [...work.changes].every(([file, blob]) => blobAt(r, commit, file) === blob);
  if (args[0] === "rebase")
    expect(holds(tip), `${context}: the rebased branch lacks the child's work${said}`).toBe(true);
  if (args[0] === "land") expect(holds(target), `${context}: main lacks the landed work${said}`).toBe(true);
  if (args[0] === "remove" || args[0] === "prune") {
    if (tip === undefined) expect(holds(target), `${context}: the branch went, unmerged${said}`).toBe(true);
    else expect(tip, `${context}: the branch moved${said}`).toBe(work.tip);
  }
}

interface CliRun {
  code: number;
  out: string;
  err: string;
}

async function cli(r: LandRig, args: readonly string[]): Promise<CliRun> {
  let out = "";
  let err = "";
  const code = await main(args, {
    env: r.env,
    cwd: r.repo.root,
    execPath: process.execPath,
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
  });
  return { code, out, err };
}

/** Every file older than its index entry, and the index refreshed: git trusts its stat data alone. */
function settle(r: LandRig): void {
  const past = new Date(Date.now() - 3_600_000);
  for (const root of [r.repo.root, r.worktree]) {
    if (!existsSync(root)) continue;
    for (const file of filesOf(root)) utimesSync(join(root, file), past, past);
    r.repo.run(["update-index", "-q", "--refresh"], { cwd: root });
  }
}

function perturb(r: LandRig, root: string, file: string, how: Perturbation, index: number): void {
  const full = join(root, file);
  switch (how) {
    case "touch": {
      const later = new Date(Date.now() + 5_000);
      utimesSync(full, later, later);
      break;
    }
    case "age": {
      // The index keeps its stat data: they no longer match, though the bytes do.
      const past = new Date(Date.now() - 7_200_000);
      utimesSync(full, past, past);
      break;
    }
    case "same_bytes":
      writeFileSync(full, readFileSync(full));
      break;
    case "same_bytes_new_inode":
      writeFileSync(`${full}.tmp`, readFileSync(full));
      renameSync(`${full}.tmp`, full);
      break;
    case "hardlink": {
      const outside = join(r.repo.dir, "links");
      mkdirSync(outside, { recursive: true });
      linkSync(full, join(outside, `${index}-${file.replace(/\//g, "-")}`));
      break;
    }
    case "chmod":
      chmodSync(full, (statSync(full).mode & 0o111) !== 0 ? 0o644 : 0o755);
      break;
    case "edit":
      writeFileSync(full, `${readFileSync(full, "utf8")}local edit ${index}\n`);
      break;
    case "stage":
      writeFileSync(full, `${readFileSync(full, "utf8")}staged edit ${index}\n`);
      r.repo.run(["add", "--", file], { cwd: root });
      break;
  }
}

/** Everything git holds that a step could change: refs, each checkout's HEAD, index entries and files. */
function worldOf(r: LandRig): Record<string, string> {
  const world: Record<string, string> = { refs: r.repo.run(["for-each-ref", "--format=%(refname) %(objectname)"]) };
  for (const [name, root] of [
    ["main", r.repo.root],
    ["worktree", r.worktree],
  ] as const) {
    if (!existsSync(root)) {
      world[`${name} exists`] = "no";
      continue;
    }
    world[`${name} HEAD`] = r.repo.run(["rev-parse", "--symbolic-full-name", "HEAD"], { cwd: root });
    world[`${name} index`] = r.repo.run(["ls-files", "--stage"], { cwd: root });
    for (const file of filesOf(root)) world[`${name} ${file}`] = contentAt(root, file);
  }
  return world;
}

/** The bytes (hashed) and executable bit of each uncommitted, staged or untracked file, per checkout. */
function uncommittedWork(r: LandRig): Map<string, Map<string, string>> {
  const work = new Map<string, Map<string, string>>();
  for (const root of [r.repo.root, r.worktree]) {
    if (!existsSync(root)) continue;
    const files = new Map<string, string>();
    const status = r.repo.run(["status", "--porcelain=v1", "-z", "--untracked-files=all"], { cwd: root });
    for (const entry of status.split("\0")) {
      if (entry.length < 4) continue;
      const file = entry.slice(3);
      files.set(file, workAt(r, root, file));
      if (entry[0] !== " " && entry[0] !== "?") files.set(`${file}${STAGED}`, workAt(r, root, `${file}${STAGED}`));
    }
    work.set(root, files);
  }
  return work;
}

/** What the child's own commits changed (path to blob, against the merge base with main), and its tip. */
function childWork(r: LandRig): { tip: string; changes: Map<string, string> } | undefined {
  const tip = refOf(r, `refs/heads/${r.branch}`);
  if (tip === undefined) return undefined;
  const base = r.repo.run(["merge-base", "refs/heads/main", tip]);
  const changes = new Map<string, string>();
  for (const file of r.repo.run(["diff", "--name-only", "-z", base, tip, "--"]).split("\0")) {
    if (file.length > 0) changes.set(file, blobAt(r, tip, file) ?? "(none)");
  }
  return { tip, changes };
}

const STAGED = " (staged)";

/** A file's bytes and mode in a checkout, or (for `<file> (staged)`) what its index holds for it. */
function workAt(r: LandRig, root: string, key: string): string {
  if (!key.endsWith(STAGED)) return contentAt(root, key);
  if (!existsSync(root)) return "(gone)";
  return r.repo.run(["ls-files", "--stage", "--", key.slice(0, -STAGED.length)], { cwd: root });
}

function contentAt(root: string, file: string): string {
  const full = join(root, file);
  if (!existsSync(full)) return "(gone)";
  const mode = lstatSync(full).mode & 0o111 ? "x" : "-";
  return `${mode} ${createHash("sha256").update(readFileSync(full)).digest("hex").slice(0, 16)}`;
}

function filesOf(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      if (name === ".git") continue;
      const full = join(dir, name);
      if (lstatSync(full).isDirectory()) walk(full);
      else found.push(relative(root, full));
    }
  };
  walk(root);
  return found.sort();
}

function refOf(r: LandRig, ref: string): string | undefined {
  try {
    return r.repo.run(["rev-parse", "--verify", "--quiet", ref]);
  } catch {
    return undefined;
  }
}

function blobAt(r: LandRig, commit: string, file: string): string | undefined {
  try {
    return r.repo.run(["rev-parse", "--verify", "--quiet", `${commit}:${file}`]);
  } catch {
    return "(none)";
  }
}

function isClean(r: LandRig, root: string): boolean {
  return r.repo.run(["status", "--porcelain", "--untracked-files=all"], { cwd: root }) === "";
}

/** The refusal's reason: its line's first clause, without the command's name or a dry run's mark. */
function firstSentence(text: string): string {
  const line = text.split("\n").find((candidate) => candidate.startsWith("pi-handoff ")) ?? text;
  return (
    line
      .replace(/^pi-handoff \w+: /, "")
      .replace(/^Dry run: /, "")
      .split(/[.;:]/)[0] ?? ""
  );
}

/** `list --json` against git: the branch's tip, how far it is ahead and behind, and the uncommitted files. */
async function expectListTellsGit(r: LandRig, context: string): Promise<void> {
  const listed = await cli(r, ["list", "--json", "--all"]);
  expect(listed.code, `${context}: list failed\n${listed.err}`).toBe(0);
  const report = (JSON.parse(listed.out) as { handoffs: Array<Record<string, unknown>> }).handoffs.find(
    (handoff) => handoff.id === r.id,
  );
  if (report === undefined || report.state === "removed") return;
  const branch = report.branchState as { code: string; tip?: string; behind?: number; mergeTarget?: { sha: string } };
  const tip = refOf(r, `refs/heads/${r.branch}`);
  expect(branch.code, `${context}: list says the branch is ${branch.code}`).toBe(
    tip === undefined ? "gone" : "present",
  );
  if (tip !== undefined && branch.mergeTarget !== undefined) {
    expect(branch.tip, context).toBe(tip);
    const behind = Number(r.repo.run(["rev-list", "--count", `${tip}..${branch.mergeTarget.sha}`]));
    expect(branch.behind ?? 0, `${context}: behind`).toBe(behind);
  }
  const changes = report.changes as { dirtyFiles: string[]; untrackedFiles: string[] } | undefined;
  if (existsSync(r.worktree) && changes !== undefined) {
    const status = r.repo.run(["status", "--porcelain=v1", "-z", "--untracked-files=all"], { cwd: r.worktree });
    const entries = status.split("\0").filter((entry) => entry.length > 3);
    const untrackedFiles = entries.filter((entry) => entry.startsWith("??")).map((entry) => entry.slice(3));
    const dirtyFiles = entries.filter((entry) => !entry.startsWith("??")).map((entry) => entry.slice(3));
    expect([...changes.dirtyFiles].sort(), `${context}: list's uncommitted files`).toEqual(dirtyFiles.sort());
    expect([...changes.untrackedFiles].sort(), `${context}: list's untracked files`).toEqual(untrackedFiles.sort());
  }
}
