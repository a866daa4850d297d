/**
 * Where a handoff's worktree goes.
 *
 * Default: `<parent of the main checkout>/<repo>.worktrees/<slug(branch)>`, beside the repository
 * and outside it (so the main checkout's status never shows it). A `worktreeDir` template from the
 * settings (`{repoParent}/{repo}.worktrees/{branch}` is the default spelled as one) replaces it;
 * `PI_HANDOFF_WORKTREE_ROOT` wins over both with `<root>/<repo>/<slug(branch)>` (the environment
 * is the most specific choice: one shell, one run).
 *
 * Invariants: an existing path is never chosen; a suffix `-2`, `-3`, ... is added instead. A path
 * inside the repository's git directory is refused. Pure path arithmetic plus existence checks.
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

/**
 * A `worktreeDir` template made a path: `{repo}`, `{repoParent}` and `{branch}` (the slug) filled
 * in, a leading `~` made the home directory, and a relative result taken from the main checkout.
 * The template was checked when the settings were read (`checkWorktreeTemplate`).
 */
export function expandWorktreeTemplate(
  template: string,
  input: { mainCheckout: string; branch: string; home: string | undefined },
): string {
  const values: Record<string, string> = {
    repo: basename(input.mainCheckout),
    repoParent: dirname(input.mainCheckout),
    branch: slugify(input.branch),
  };
  const filled = template.replace(/\{([^{}]*)\}/g, (whole, name: string) => values[name] ?? whole);
  return resolve(input.mainCheckout, expandHome(filled, input.home));
}

export function chooseWorktreePath(input: {
  mainCheckout: string;
  branch: string;
  env: NodeJS.ProcessEnv;
  template?: string | undefined;
}): string {
  const repoName = basename(input.mainCheckout);
  const configuredRoot = input.env[WORKTREE_ROOT_ENV];
  let wanted: string;
  if (configuredRoot !== undefined && configuredRoot.trim() !== "") {
    wanted = join(resolve(expandHome(configuredRoot.trim(), input.env.HOME)), repoName, slugify(input.branch));
  } else if (input.template !== undefined) {
    wanted = expandWorktreeTemplate(input.template, {
      mainCheckout: input.mainCheckout,
      branch: input.branch,
      home: input.env.HOME,
    });
  } else {
    wanted = join(dirname(input.mainCheckout), `${repoName}.worktrees`, slugify(input.branch));
  }
  const base = join(canonicalParent(dirname(wanted)), basename(wanted));
  const gitDir = join(input.mainCheckout, ".git");
  if (base === gitDir || base.startsWith(`${gitDir}/`)) {
    throw new Error(`The worktree path ${base} is inside the repository's .git directory; choose another worktreeDir.`);
  }
  if (!existsSync(base)) return base;
  for (let n = 2; n < 1000; n++) {
    const candidate = `${base}-${n}`;
    if (!existsSync(candidate)) return candidate;
  }
  throw new Error(`Every worktree path like ${base} is taken; remove old worktrees first.`);
}
