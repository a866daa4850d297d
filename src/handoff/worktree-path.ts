/**
 * Where a handoff's worktree goes.
 *
 * Default: `<parent of the main checkout>/<repo>.worktrees/<slug(branch)>`, beside the repository
 * and outside it (so the main checkout's status never shows it). `PI_HANDOFF_WORKTREE_ROOT`
 * replaces that with `<root>/<repo>/<slug(branch)>`.
 *
 * Invariant: an existing path is never chosen; a suffix `-2`, `-3`, ... is added instead.
 */
import { existsSync, realpathSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { expandHome } from "../session/paths.ts";

export const WORKTREE_ROOT_ENV = "PI_HANDOFF_WORKTREE_ROOT";

/** Herdr's slug rule: lowercase ASCII alphanumerics; each run of anything else becomes one `-`. */
export function slugify(value: string): string {
  const slug = value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return slug.length > 0 ? slug.slice(0, 80).replace(/-+$/, "") : "worktree";
}

/** Resolve symlinks in the existing part of a path, so recorded paths compare by realpath. */
function canonicalParent(path: string): string {
  let existing = resolve(path);
  const rest: string[] = [];
  while (!existsSync(existing)) {
    const parent = dirname(existing);
    if (parent === existing) break;
    rest.unshift(basename(existing));
    existing = parent;
  }
  return join(realpathSync(existing), ...rest);
}

export function chooseWorktreePath(input: { mainCheckout: string; branch: string; env: NodeJS.ProcessEnv }): string {
  const repoName = basename(input.mainCheckout);
  const configuredRoot = input.env[WORKTREE_ROOT_ENV];
  const directory =
    configuredRoot !== undefined && configuredRoot.trim() !== ""
      ? join(resolve(expandHome(configuredRoot.trim(), input.env.HOME)), repoName)
      : join(dirname(input.mainCheckout), `${repoName}.worktrees`);
  const base = join(canonicalParent(directory), slugify(input.branch));
  if (!existsSync(base)) return base;
  for (let n = 2; n < 1000; n++) {
    const candidate = `${base}-${n}`;
    if (!existsSync(candidate)) return candidate;
  }
  throw new Error(`Every worktree path like ${base} is taken; remove old worktrees first.`);
}
