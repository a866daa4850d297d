/**
 * Step 0 of the handoff: every check, nothing written. Each check is a small function that either
 * passes or returns a refusal with a code (notice.ts words it); `planHandoff` runs them in the
 * order a user would fix them and returns the plan the later steps carry out.
 *
 * Invariants:
 * - Nothing here writes: a refusal leaves no trace (the only exception is a `--fetch` the user
 *   asked for, which updates one remote-tracking ref).
 * - The read-only git checks do not depend on each other and run at once; their refusals are
 *   reported in a fixed order, so the same input always gets the same sentence.
 * - Every input a later step needs from the parent checkout (the changes to carry, the base SHA)
 *   is read here, so a checkout that cannot be handed off is refused before the manifest exists.
 * - The PI_HANDOFF_* variables are checked first (config/env.ts), as the settings file is: an
 *   unusable one refuses before anything else is asked.
 * - Uncommitted work the handoff does not take along is said in one note, never silently left.
 */
import { readHandoffEnv } from "../config/env.ts";
import { applyBranchPrefix, type HandoffConfig } from "../config/schema.ts";
import { errorMessage } from "../errors.ts";
import type { ChangesSnapshot, RepositoryInfo, WorktreeEntry } from "../git/types.ts";
import { branchNameLengthProblem } from "../git/ref-name.ts";
import type { Multiplexer } from "../mux/types.ts";
import type { HandoffArgs } from "./args.ts";
import type { HandoffDeps } from "./deps.ts";
import { checkBaseFreshness, type Freshness } from "./freshness.ts";
import { leftBehindNote, type Refusal } from "./notice.ts";
import { chooseWorktreePath } from "./worktree-path.ts";
import { hasControlCharacter } from "../text.ts";

export interface ParentSnapshot {
  /** Undefined with `--no-session`. */
  sessionFile: string | undefined;
  sessionFileExists: boolean;
  sessionId: string;
  leafId: string | null;
  cwd: string;
  sessionDir: string;
}

export interface HandoffRequest {
  args: HandoffArgs;
  parent: ParentSnapshot;
  /** The selected model; `available` is false when this Pi's registry does not know it. */
  model: { provider: string; id: string; available: boolean } | undefined;
  thinkingLevel: string | undefined;
  projectTrusted: boolean;
  agentDir: string;
  piCommand: readonly string[];
  extraPiArgs: readonly string[];
  env: NodeJS.ProcessEnv;
  /** The merged settings (config/load.ts); absent: none. */
  config?: HandoffConfig;
  /** Pi runs in print mode (`pi -p`): a refusal's advice must be something a script can do. */
  printMode?: boolean;
}

export interface Plan {
  id: string;
  repo: RepositoryInfo;
  branch: string;
  base: { ref: string; sha: string };
  worktreePath: string;
  parentSessionFile: string;
  leafId: string;
  model: { provider: string; id: string };
  mux: Multiplexer;
  config: HandoffConfig;
  /** `--existing`: `branch` exists and `base` is its commit. */
  existing: boolean;
  /** `--carry`: the parent checkout's changes, read before anything was written. */
  carry: ChangesSnapshot | undefined;
  /** Lines for the user and the handoff message (base freshness, setup), in order. */
  notes: string[];
}

export type Checked<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

type PlanDeps = Pick<HandoffDeps, "git" | "store" | "selectMux" | "checkoutGit">;

const pass = <T>(value: T): Checked<T> => ({ ok: true, value });
const refuse = (refusal: Refusal): { ok: false; refusal: Refusal } => ({ ok: false, refusal });

/** The parent session can be handed off: saved, with messages on disk. */
export function checkSession(
  parent: ParentSnapshot,
  printMode = false,
): Checked<{ sessionFile: string; leafId: string }> {
  if (parent.sessionFile === undefined) return refuse({ code: "session_not_saved" });
  if (!parent.sessionFileExists || parent.leafId === null) return refuse({ code: "session_empty", printMode });
  return pass({ sessionFile: parent.sessionFile, leafId: parent.leafId });
}

/** A model is selected and this Pi can use it. */
export function checkModel(model: HandoffRequest["model"]): Checked<{ provider: string; id: string }> {
  if (model === undefined) return refuse({ code: "no_model" });
  if (!model.available) return refuse({ code: "model_unavailable", model: `${model.provider}/${model.id}` });
  return pass({ provider: model.provider, id: model.id });
}

/** Settings that need the setup git (carry, fetch, copies, links) have it. */
export function checkCheckoutGit(args: HandoffArgs, config: HandoffConfig, hasCheckoutGit: boolean): Checked<void> {
  const needs =
    args.carry !== undefined ||
    args.fetch === true ||
    (config.copy?.length ?? 0) > 0 ||
    (config.symlink?.length ?? 0) > 0;
  return needs && !hasCheckoutGit ? refuse({ code: "setup_git_missing" }) : pass(undefined);
}

interface BranchFacts {
  branch: string;
  existing: boolean;
  validName: boolean;
  worktrees: readonly WorktreeEntry[];
  exists: boolean;
  commonDir: string;
}

/** The branch can be used: a valid, storable name, not checked out, new (or present with `--existing`). */
export function checkBranch(facts: BranchFacts): Checked<void> {
  const { branch, existing } = facts;
  if (!facts.validName) return refuse({ code: "invalid_branch", branch });
  // check-ref-format accepts names the file system cannot store; refuse them here, not at the worktree step.
  const unstorable = branchNameLengthProblem(branch, facts.commonDir);
  if (unstorable !== undefined) return refuse({ code: "branch_unstorable", detail: unstorable });
  const checkedOut = facts.worktrees.find((worktree) => worktree.branch === branch);
  if (checkedOut !== undefined) return refuse({ code: "branch_checked_out", branch, path: checkedOut.path, existing });
  if (!existing && facts.exists) return refuse({ code: "branch_exists", branch });
  if (existing && !facts.exists) return refuse({ code: "branch_missing", branch });
  return pass(undefined);
}

/** The worktree path for the branch: chosen by the settings, typeable into a terminal. */
export function checkWorktreePath(input: Parameters<typeof chooseWorktreePath>[0]): Checked<string> {
  let path: string;
  try {
    path = chooseWorktreePath(input);
  } catch (error) {
    return refuse({ code: "worktree_path", detail: errorMessage(error) });
  }
  // The launch types this path into a terminal, where a control character (a tab, a newline in a
  // directory name) would be a keystroke: refuse now rather than fail at the launch step.
  if (hasControlCharacter(path)) return refuse({ code: "worktree_path_control", path });
  return pass(path);
}

/** Every check, in order; the plan when all hold. */
export async function planHandoff(deps: PlanDeps, request: HandoffRequest): Promise<Checked<Plan>> {
  const { args, parent } = request;
  // The environment first, like the settings file: an unusable PI_HANDOFF_* value is named before anything else.
  const environment = readHandoffEnv(request.env);
  if (!environment.ok) return refuse({ code: "environment", detail: environment.message });
  const session = checkSession(parent, request.printMode === true);
  if (!session.ok) return session;
  const model = checkModel(request.model);
  if (!model.ok) return model;
  const config = request.config ?? {};
  const mux = await deps.selectMux(args.mux ?? config.mux);
  if (!mux.ok) return refuse({ code: "no_multiplexer", detail: mux.message });
  const repo = await deps.git.findRepository(parent.cwd);
  if (repo === undefined) return refuse({ code: "not_a_repository", cwd: parent.cwd });
  const checkoutGitOk = checkCheckoutGit(args, config, deps.checkoutGit !== undefined);
  if (!checkoutGitOk.ok) return checkoutGitOk;

  // Asked beside the branch and base checks (it never fails: a git that cannot tell says nothing).
  const leftBehindAsked = noteLeftBehind(deps, args, repo);
  const target = await resolveTarget(deps, request, repo, config);
  if (!target.ok) return target;
  const { branch, existing, base, notes } = target.value;
  const worktreePath = checkWorktreePath({
    mainCheckout: repo.mainCheckout,
    branch,
    env: request.env,
    template: config.worktreeDir,
  });
  if (!worktreePath.ok) return worktreePath;
  const [carry, leftBehind] = await Promise.all([readCarry(deps, args, repo), leftBehindAsked]);
  if (!carry.ok) return carry;
  return pass({
    id: deps.store.newId(branch),
    repo,
    branch,
    base,
    worktreePath: worktreePath.value,
    parentSessionFile: session.value.sessionFile,
    leafId: session.value.leafId,
    model: model.value,
    mux: mux.mux,
    config,
    existing,
    carry: carry.value,
    notes: leftBehind === undefined ? notes : [...notes, leftBehind],
  });
}

/** Uncommitted work the handoff does not take along is said, once, with how to take it (read only; silent if git cannot tell). */
async function noteLeftBehind(deps: PlanDeps, args: HandoffArgs, repo: RepositoryInfo): Promise<string | undefined> {
  if (deps.checkoutGit === undefined || args.carry === "all") return undefined;
  try {
    return leftBehindNote(
      await deps.checkoutGit.uncommittedCounts(repo.currentCheckout),
      args.carry,
      repo.currentCheckout,
    );
  } catch {
    return undefined;
  }
}

interface Target {
  branch: string;
  existing: boolean;
  base: { ref: string; sha: string };
  notes: string[];
}

/**
 * The branch (with the settings' prefix) and the base SHA. The read-only git checks are asked all
 * at once; with `--fetch` the base is resolved after the fetch. Base freshness runs alongside
 * the checks when it only reads.
 */
async function resolveTarget(
  deps: PlanDeps,
  request: HandoffRequest,
  repo: RepositoryInfo,
  config: HandoffConfig,
): Promise<Checked<Target>> {
  const { args } = request;
  const existing = args.existing === true;
  // The prefix goes in front of a new branch's name. An existing branch is found with the prefix
  // first (as a new one would have been named), else as typed.
  let branch = applyBranchPrefix(args.branch, config.branchPrefix);
  if (existing && branch !== args.branch && !(await deps.git.branchExists(repo.mainCheckout, branch)))
    branch = args.branch;
  const baseLooksLikeOption = !existing && args.base.startsWith("-");
  const fetchFirst = args.fetch === true && !existing;
  const resolveBase = (): Promise<string | undefined> =>
    existing
      ? deps.git.resolveCommit(repo.mainCheckout, `refs/heads/${branch}`)
      : deps.git.resolveCommit(repo.currentCheckout, args.base);
  const freshnessInput = {
    ref: existing ? `refs/heads/${branch}` : args.base,
    label: existing ? branch : args.base,
    fetch: args.fetch === true,
  };
  const freshness = (): Promise<Freshness> | undefined =>
    deps.checkoutGit !== undefined
      ? checkBaseFreshness(deps.checkoutGit, repo.currentCheckout, freshnessInput)
      : undefined;
  const early = args.fetch !== true && !baseLooksLikeOption ? freshness() : undefined;
  const [validName, worktrees, exists, resolved] = await Promise.all([
    deps.git.isValidBranchName(branch),
    deps.git.listWorktrees(repo.mainCheckout),
    deps.git.branchExists(repo.mainCheckout, branch),
    baseLooksLikeOption || fetchFirst ? Promise.resolve(undefined) : resolveBase(),
  ]);
  const branchOk = checkBranch({ branch, existing, validName, worktrees, exists, commonDir: repo.commonDir });
  if (!branchOk.ok) return branchOk;
  if (baseLooksLikeOption) return refuse({ code: "base_is_option", base: args.base });
  const notes: string[] = [];
  const fresh = await (early ?? freshness());
  if (fresh !== undefined) {
    if (!fresh.ok) return refuse({ code: "base_freshness", detail: fresh.message });
    notes.push(...fresh.notes);
  }
  const sha = fetchFirst ? await resolveBase() : resolved;
  if (sha === undefined) {
    if (existing) return refuse({ code: "branch_without_commit", branch });
    // An unborn HEAD: no base of any name can resolve yet, and "HEAD does not resolve" would not say why.
    const head = args.base === "HEAD" ? undefined : await deps.git.resolveCommit(repo.currentCheckout, "HEAD");
    return refuse(
      head === undefined
        ? { code: "no_commits", repo: repo.mainCheckout }
        : { code: "base_unresolved", base: args.base },
    );
  }
  if (existing && args.baseGiven)
    notes.unshift(`Base ${args.base} was ignored: --existing checks out ${branch} as it is (at ${sha.slice(0, 12)}).`);
  return pass({ branch, existing, base: { ref: existing ? branch : args.base, sha }, notes });
}

/** `--carry`: the changes are read now and applied in the setup step. */
async function readCarry(
  deps: PlanDeps,
  args: HandoffArgs,
  repo: RepositoryInfo,
): Promise<Checked<ChangesSnapshot | undefined>> {
  if (args.carry === undefined || deps.checkoutGit === undefined) return pass(undefined);
  try {
    return pass(await deps.checkoutGit.snapshotChanges(repo.currentCheckout, args.carry));
  } catch (error) {
    return refuse({ code: "carry_unreadable", detail: errorMessage(error) });
  }
}
