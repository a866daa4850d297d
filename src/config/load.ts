/**
 * Reading the settings of `/handoff-worktree`: the user's `<agentDir>/handoff-worktree.json`, then
 * the repository's `<checkout>/.pi/handoff-worktree.json` over it, key by key.
 *
 * Invariants:
 * - The repository's file is read only when Pi trusts the project (`projectTrusted`): it can make
 *   commands run (postCreate) and files be linked. An untrusted project's file is ignored with a
 *   one-line notice, never half-applied.
 * - A missing file is no settings; an unreadable or invalid one is an error (one sentence naming
 *   the file and the key), so a handoff never runs with settings the user did not get.
 * - The merged settings are checked as a whole where one key depends on another from the other
 *   file (`env` naming ports that `ports` must reserve); the sentence names the file `env` came from.
 * - Reads only; never writes, never runs anything. The checkout is found by walking up to the
 *   directory that holds `.git` (a directory, or a file in a linked worktree), as git does.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { checkPortPlaceholders, type HandoffConfig, mergeConfig, parseConfig } from "./schema.ts";
import { errorClause } from "../errors.ts";

export const USER_CONFIG_NAME = "handoff-worktree.json";
export const REPO_CONFIG_PATH = join(".pi", "handoff-worktree.json");

export interface LoadConfigInput {
  /** Where Pi runs (`ctx.cwd`); the repository's file is looked for at the top of its checkout. */
  cwd: string;
  agentDir: string;
  /** `ctx.isProjectTrusted()`. */
  projectTrusted: boolean;
}

export type LoadedConfig =
  | {
      ok: true;
      config: HandoffConfig;
      /** The files whose settings apply, user's first. */
      files: string[];
      /** One line each, for the user (an ignored repository file). */
      notices: string[];
      /**
       * The repository's own postCreate commands and `env` variables, where they are the ones that
       * apply: both can make code run (a command; a variable such as NODE_OPTIONS or LD_PRELOAD),
       * so both need approval. `commands` is empty when only the variables are the repository's.
       * The repository's `check` (run by `pi-handoff land --all`) is code too: the same approval covers it.
       */
      repoNeedsApproval?: { file: string; commands: string[]; env?: Record<string, string>; check?: string | string[] };
    }
  | { ok: false; message: string };

/** The top of the checkout that contains `cwd`, or undefined outside any. */
export function findCheckoutTop(cwd: string): string | undefined {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, ".git"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

export async function loadHandoffConfig(input: LoadConfigInput): Promise<LoadedConfig> {
  const loaded = await loadFiles(input);
  if (!loaded.ok) return loaded;
  const { envFile, ...settings } = loaded;
  const problem = checkPortPlaceholders(settings.config);
  if (problem === undefined) return settings;
  return { ok: false, message: `"env" in ${envFile ?? "the settings"} ${problem}.` };
}

/** Both files, merged; `envFile`: the one whose `env` applies. */
async function loadFiles(
  input: LoadConfigInput,
): Promise<(Extract<LoadedConfig, { ok: true }> & { envFile?: string }) | Extract<LoadedConfig, { ok: false }>> {
  const files: string[] = [];
  const notices: string[] = [];
  let config: HandoffConfig = {};
  let envFile: string | undefined;

  const userFile = join(input.agentDir, USER_CONFIG_NAME);
  const user = await readConfigFile(userFile);
  if (!user.ok) return user;
  if (user.config !== undefined) {
    config = user.config;
    files.push(userFile);
    if (user.config.env !== undefined) envFile = userFile;
  }

  const top = findCheckoutTop(input.cwd);
  if (top !== undefined) {
    const repoFile = join(top, REPO_CONFIG_PATH);
    if (!input.projectTrusted) {
      if (existsSync(repoFile)) {
        notices.push(
          `Ignored ${repoFile}: this project is not trusted in Pi, so its handoff settings (which can run commands) are not used.`,
        );
      }
    } else {
      const repo = await readConfigFile(repoFile);
      if (!repo.ok) return repo;
      if (repo.config !== undefined) {
        config = mergeConfig(config, repo.config);
        files.push(repoFile);
        if (repo.config.env !== undefined) envFile = repoFile;
        const commands = repo.config.postCreate ?? [];
        const env =
          repo.config.env !== undefined && Object.keys(repo.config.env).length > 0 ? repo.config.env : undefined;
        const check = repo.config.check;
        if (commands.length > 0 || env !== undefined || check !== undefined) {
          return {
            ok: true,
            config,
            files,
            notices,
            repoNeedsApproval: {
              file: repoFile,
              commands,
              ...(env === undefined ? {} : { env }),
              ...(check === undefined ? {} : { check }),
            },
            ...(envFile === undefined ? {} : { envFile }),
          };
        }
      }
    }
  }
  return { ok: true, config, files, notices, ...(envFile === undefined ? {} : { envFile }) };
}

async function readConfigFile(
  file: string,
): Promise<{ ok: true; config: HandoffConfig | undefined } | { ok: false; message: string }> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if (error instanceof Error && "code" in error && error.code === "ENOENT") return { ok: true, config: undefined };
    return { ok: false, message: `Could not read ${file}: ${errorClause(error)}.` };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    const reason = errorClause(error);
    return { ok: false, message: `${file} is not valid JSON (${reason}); fix it or remove it.` };
  }
  const parsed = parseConfig(value, file);
  return parsed.ok ? { ok: true, config: parsed.config } : parsed;
}
