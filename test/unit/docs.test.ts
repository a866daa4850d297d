/**
 * The documentation cannot drift from the code: every relative link resolves (file and heading),
 * every flag of /handoff-worktree the README names is one the command knows, every `pi-handoff`
 * command and flag it names is one `pi-handoff --help` (the real executable) lists, and every
 * environment variable it names is read by the code.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { HANDOFF_HELP, parseHandoffArgs } from "../../src/handoff/args.ts";
import { NODE_BIN, PROJECT_ROOT } from "../support/pi.ts";

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return markdownFiles(full);
    return name.endsWith(".md") ? [full] : [];
  });
}

const README = join(PROJECT_ROOT, "README.md");
const DOCS = [README, ...markdownFiles(join(PROJECT_ROOT, "docs"))];
const PACKAGE = JSON.parse(readFileSync(join(PROJECT_ROOT, "package.json"), "utf8")) as {
  homepage: string;
  files: string[];
};
/** The repository, from package.json's homepage: where the README's links and picture point. */
const REPO_URL = PACKAGE.homepage.replace(/#.*$/, "");
const REPO_BLOB = `${REPO_URL}/blob/main/`;
const REPO_RAW = `${REPO_URL.replace("https://github.com/", "https://raw.githubusercontent.com/")}/main/`;

/** The README's picture, by its path in the repository. */
const DEMO_PICTURE = "docs/demo.png";

/** GitHub's heading anchors: lowercase, punctuation dropped, spaces to dashes. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const match of markdown.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    anchors.add(
      (match[1] ?? "")
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, "")
        .replace(/\s/g, "-"),
    );
  }
  return anchors;
}

function withoutCodeBlocks(markdown: string): string {
  return markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
}

describe("documentation", () => {
  it("has the documents the project promises", () => {
    for (const doc of [
      "README.md",
      "docs/architecture.md",
      "docs/launch-contract.md",
      "docs/recovery.md",
      "docs/demo.png",
      "docs/decisions/0006-lineage-ledger-in-the-session.md",
      "docs/decisions/0007-recovery-keeps-records-and-unmerged-work.md",
    ]) {
      expect(existsSync(join(PROJECT_ROOT, doc)), doc).toBe(true);
    }
  });

  it.each(DOCS.map((file) => [relative(PROJECT_ROOT, file), file]))(
    "%s: every relative link resolves",
    (_name, file) => {
      const text = withoutCodeBlocks(readFileSync(file, "utf8"));
      const broken: string[] = [];
      const isReadme = file === README;
      for (const match of text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
        let target = match[1] ?? "";
        // The README is also the registry's page, where a relative link leads nowhere: it links into
        // the repository by absolute URL, checked here against the files it names. The one
        // exception is the demo picture, by its path in the repository: it shows offline (a
        // checkout, the installed package), and GitHub and the registry resolve it there.
        if (isReadme && !/^[a-z]+:/i.test(target) && target !== DEMO_PICTURE) {
          broken.push(`${target} (relative in the README)`);
          continue;
        }
        const own = [REPO_BLOB, REPO_RAW].find((base) => target.startsWith(base));
        if (own !== undefined) target = relative(dirname(file), join(PROJECT_ROOT, target.slice(own.length))) || ".";
        else if (/^[a-z]+:/i.test(target)) continue; // external: not checked offline
        const [pathPart = "", anchor] = target.split("#");
        const resolved = pathPart === "" ? file : resolve(dirname(file), pathPart);
        if (!existsSync(resolved)) {
          broken.push(target);
          continue;
        }
        if (
          anchor !== undefined &&
          resolved.endsWith(".md") &&
          !anchorsOf(readFileSync(resolved, "utf8")).has(anchor)
        ) {
          broken.push(target);
        }
      }
      expect(broken).toEqual([]);
    },
  );

  it("names only flags /handoff-worktree knows, and the command accepts them", () => {
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    const usages = [...readme.matchAll(/^\/handoff-worktree( [^\n]*)?$/gm)].map((m) => m[0]);
    expect(usages.length).toBeGreaterThan(2);
    for (const usage of usages) {
      for (const flag of usage.split(" -- ")[0]?.match(/--[a-z-]+/g) ?? []) {
        expect(HANDOFF_HELP, `${flag} in "${usage}"`).toContain(flag);
      }
      // Every example line (not the synopsis) must parse.
      if (!usage.includes("<branch>")) {
        expect(parseHandoffArgs(usage.slice("/handoff-worktree ".length)), usage).toMatchObject({ ok: true });
      }
    }
  });

  it("names only pi-handoff commands and flags that pi-handoff --help lists", () => {
    const run = spawnSync(NODE_BIN, [join(PROJECT_ROOT, "bin", "pi-handoff.mjs"), "--help"], {
      encoding: "utf8",
      timeout: 60_000,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: PROJECT_ROOT },
    });
    expect(run.status).toBe(0);
    const help = run.stdout;
    const commandsBlock = help.slice(help.indexOf("Commands:"), help.indexOf("Exit status:"));
    const commands = new Set([...commandsBlock.matchAll(/^ {2}([a-z]+)\b/gm)].map((m) => m[1] ?? ""));
    expect([...commands].sort()).toEqual([
      "completion",
      "env",
      "focus",
      "forecast",
      "inspect",
      "land",
      "list",
      "prune",
      "rebase",
      "relaunch",
      "remove",
      "tree",
    ]);
    const helpFlags = new Set(help.match(/--[a-z][a-z-]*/g) ?? []);

    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    // Commands are named in code: fenced blocks and inline spans, one line at a time.
    const code = [...readme.matchAll(/```[\s\S]*?```/g), ...readme.matchAll(/`[^`\n]+`/g)].flatMap((m) =>
      m[0].split("\n"),
    );
    const uses = code.flatMap((line) => [...line.matchAll(/(?<![\w-])pi-handoff ([a-z][\w-]*)([^`#\n]*)/g)]);
    expect(uses.length).toBeGreaterThan(8);
    const named = new Set<string>();
    for (const use of uses) {
      const [whole, command = "", rest = ""] = use;
      expect(commands, whole).toContain(command);
      named.add(command);
      for (const flag of rest.match(/--[a-z][a-z-]*/g) ?? [])
        expect(helpFlags, `${flag} in "${whole}"`).toContain(flag);
    }
    // The README shows every command at least once.
    expect([...named].sort()).toEqual([...commands].sort());
  });

  it("names only environment variables the code reads, and embeds the demo picture", () => {
    const readme = readFileSync(join(PROJECT_ROOT, "README.md"), "utf8");
    const sources = ["src", "pi-extension"]
      .flatMap((dir) => sourceFiles(join(PROJECT_ROOT, dir)))
      .map((file) => readFileSync(file, "utf8"))
      .join("\n");
    const variables = new Set(readme.match(/\bPI_HANDOFF_[A-Z_]+/g) ?? []);
    expect(variables.size).toBeGreaterThan(3);
    // Read as `env.NAME`, `env["NAME"]` or through a constant `"NAME"`: a name in a comment does not count.
    const unread = [...variables].filter((variable) => !new RegExp(`(?:\\.|["'])${variable}\\b`).test(sources));
    expect(unread).toEqual([]);
    // By its path in the repository, a file the package ships: it shows offline too.
    expect(readme).toContain(`](${DEMO_PICTURE})`);
    expect(readme).not.toContain(`${REPO_RAW}docs/demo.png`);
    expect(PACKAGE.files).toContain(DEMO_PICTURE);
  });
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return name.endsWith(".ts") ? [full] : [];
  });
}
