/**
 * Approval of a repository's `postCreate` commands and `env` variables. A repository's settings
 * file is code that runs on the user's machine (a variable too: NODE_OPTIONS, LD_PRELOAD, PATH);
 * Pi's project trust does not cover it when the repository has no other project resources (Pi
 * then trusts it by default), so this package asks once per exact list and remembers the answer.
 *
 * Invariants:
 * - An approval names the settings file (realpath) and the sha256 of its exact commands (and
 *   variables and `check`, when it has them: commands alone digest as they always did, so an
 *   approval given before variables or the check existed still holds); any change needs a new approval.
 * - The record is `<agentDir>/handoff-worktree/approved-post-create.json`, validated by a zod
 *   schema and replaced atomically; an unreadable record approves nothing.
 * - `settingsForHandoff` is the one order a handoff's settings are decided in: load, tell the
 *   notices, approve; the adapter only reports what it answers.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile, realpath } from "node:fs/promises";
import { dirname, join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../fs/atomic-write.ts";
import { loadHandoffConfig, type LoadConfigInput } from "./load.ts";
import type { ParsedConfig } from "./schema.ts";

const ApprovalsSchema = z.strictObject({
  version: z.literal(1),
  approvals: z.record(z.string(), z.strictObject({ sha256: z.string().regex(/^[0-9a-f]{64}$/), at: z.string() })),
});
type Approvals = z.infer<typeof ApprovalsSchema>;

export function approvalsFile(agentDir: string): string {
  return join(agentDir, "handoff-worktree", "approved-post-create.json");
}

/** The repository's code a settings file asks to run: its postCreate commands, `env` variables and `check`. */
export interface RepoCode {
  file: string;
  commands: string[];
  env?: Record<string, string>;
  check?: string | string[];
}

function digest(
  commands: readonly string[],
  env?: Readonly<Record<string, string>>,
  check?: string | readonly string[],
): string {
  const variables = env === undefined || Object.keys(env).length === 0 ? undefined : env;
  const approved =
    variables === undefined && check === undefined
      ? commands
      : { commands, ...(variables === undefined ? {} : { env: variables }), ...(check === undefined ? {} : { check }) };
  return createHash("sha256").update(JSON.stringify(approved)).digest("hex");
}

async function canonical(file: string): Promise<string> {
  try {
    return await realpath(file);
  } catch {
    return file;
  }
}

async function readApprovals(agentDir: string): Promise<Approvals> {
  try {
    const parsed = ApprovalsSchema.safeParse(JSON.parse(await readFile(approvalsFile(agentDir), "utf8")));
    if (parsed.success) return parsed.data;
  } catch {
    // Missing or unreadable: nothing is approved.
  }
  return { version: 1, approvals: {} };
}

export async function isPostCreateApproved(
  agentDir: string,
  settingsFile: string,
  commands: readonly string[],
  env?: Readonly<Record<string, string>>,
  check?: string | readonly string[],
): Promise<boolean> {
  const approvals = await readApprovals(agentDir);
  return approvals.approvals[await canonical(settingsFile)]?.sha256 === digest(commands, env, check);
}

export async function approvePostCreate(
  agentDir: string,
  settingsFile: string,
  commands: readonly string[],
  now = new Date(),
  env?: Readonly<Record<string, string>>,
  check?: string | readonly string[],
): Promise<void> {
  const approvals = await readApprovals(agentDir);
  approvals.approvals[await canonical(settingsFile)] = {
    sha256: digest(commands, env, check),
    at: now.toISOString(),
  };
  const file = approvalsFile(agentDir);
  await mkdir(dirname(file), { recursive: true });
  await writeFileAtomic(file, `${JSON.stringify(approvals, null, 2)}\n`);
}

/**
 * What the approval needs from the host: whether a person can be asked, and asking a choice (the
 * first option is the one Enter takes; undefined: Escape).
 */
export interface ApprovalPrompt {
  hasUI: boolean;
  choose(title: string, options: readonly string[]): Promise<string | undefined>;
}

/** The approval's answers, the refusal first: a reflexive Enter or Escape runs nothing. */
export function approvalOptions(what: string): readonly [refuse: string, approve: string] {
  const commands = what.startsWith("postCreate commands");
  const variables = what.endsWith("env variables");
  const [refuse, approve] =
    commands && variables ? ["run or use", "run and use"] : commands ? ["run", "run"] : ["use", "use"];
  return [`No, do not ${refuse} them`, `Yes, ${approve} them (remembered for this exact list)`];
}

/**
 * A repository's postCreate commands run on this machine: approved once per exact list (a
 * choice in a UI whose first option refuses, `--approve-repo-code` in print mode) and remembered.
 * Returns the refusal, if any.
 */
async function approveRepoPostCreate(input: {
  agentDir: string;
  hooks: RepoCode;
  approvedByFlag: boolean;
  prompt: ApprovalPrompt;
}): Promise<string | undefined> {
  const { agentDir, hooks } = input;
  if (await isPostCreateApproved(agentDir, hooks.file, hooks.commands, hooks.env, hooks.check)) return undefined;
  const variables = Object.entries(hooks.env ?? {});
  const what =
    hooks.commands.length === 0
      ? variables.length === 0
        ? "check settings"
        : "env variables"
      : variables.length === 0
        ? "postCreate commands"
        : "postCreate commands and env variables";
  if (!input.approvedByFlag) {
    if (!input.prompt.hasUI) {
      return `The ${what} in ${hooks.file} have not been approved yet; review them and add --approve-repo-code, or run the handoff once in Pi's TUI.`;
    }
    const listed = [
      ...(hooks.commands.length === 0 ? [] : ["to run, in the new worktree:"]),
      ...hooks.commands.map((command, index) => `${index + 1}. ${command}`),
      ...(variables.length === 0 ? [] : ["to set, for everything run for the handoff (Pi included):"]),
      ...variables.map(([name, value]) => `${name}=${value}`),
      ...(hooks.check === undefined
        ? []
        : [`to run before each landing (pi-handoff land --all): ${checkText(hooks.check)}`]),
    ].join("\n");
    const title =
      hooks.commands.length === 0 && variables.length === 0
        ? "Run this repository's check before each landing?"
        : variables.length === 0
          ? "Run this repository's postCreate commands?"
          : `Use this repository's ${what}?`;
    const [, approve] = approvalOptions(what);
    const answer = await input.prompt.choose(`${title}\n${hooks.file} asks ${listed}`, approvalOptions(what));
    if (answer !== approve) return `The handoff was not started: the ${what} in ${hooks.file} were not approved.`;
  }
  await approvePostCreate(agentDir, hooks.file, hooks.commands, undefined, hooks.env, hooks.check);
  return undefined;
}

/** A check as a person reads it: the shell command, or the argument list as JSON (no word is lost or joined). */
export function checkText(check: string | readonly string[]): string {
  return typeof check === "string" ? check : JSON.stringify(check);
}

/**
 * The check `pi-handoff land --all` may run: the settings' `check`, when it is the user's own or
 * a repository's whose approval covers it (`approvedByFlag`: `--approve-repo-code`, which records
 * the approval as a handoff's does). `undefined` check: none is set.
 */
export async function approvedCheck(input: {
  agentDir: string;
  config: { check?: string | string[] };
  repoNeedsApproval: RepoCode | undefined;
  approvedByFlag: boolean;
}): Promise<{ ok: true; check: string | string[] | undefined } | { ok: false; message: string }> {
  const check = input.config.check;
  const repo = input.repoNeedsApproval;
  if (check === undefined || repo?.check === undefined) return { ok: true, check };
  if (await isPostCreateApproved(input.agentDir, repo.file, repo.commands, repo.env, repo.check))
    return { ok: true, check };
  if (!input.approvedByFlag)
    return {
      ok: false,
      message: `The check in ${repo.file} (${checkText(repo.check)}) has not been approved yet; review it and add --approve-repo-code, or approve the repository's code once in Pi's TUI; nothing was landed.`,
    };
  await approvePostCreate(input.agentDir, repo.file, repo.commands, undefined, repo.env, repo.check);
  return { ok: true, check };
}

/**
 * The settings a handoff runs with, decided before anything is waited for or written: loaded (an
 * invalid file refuses), each notice told, then a repository's postCreate commands approved or
 * refused, in that order.
 */
export async function settingsForHandoff(
  input: LoadConfigInput & { approvedByFlag: boolean; prompt: ApprovalPrompt; notify(notice: string): void },
): Promise<ParsedConfig> {
  const settings = await loadHandoffConfig(input);
  if (!settings.ok) return settings;
  for (const notice of settings.notices) input.notify(notice);
  if (settings.repoNeedsApproval !== undefined) {
    const refusal = await approveRepoPostCreate({
      agentDir: input.agentDir,
      hooks: settings.repoNeedsApproval,
      approvedByFlag: input.approvedByFlag,
      prompt: input.prompt,
    });
    if (refusal !== undefined) return { ok: false, message: refusal };
  }
  return { ok: true, config: settings.config };
}
