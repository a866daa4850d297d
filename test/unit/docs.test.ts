/**
 * The documentation cannot drift from the code: every relative link resolves (file and heading),
 * and every flag of /handoff-worktree the README names is one the command knows.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { HANDOFF_HELP, parseHandoffArgs } from "../../src/handoff/args.ts";
import { PROJECT_ROOT } from "../support/pi.ts";

function markdownFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) return markdownFiles(full);
    return name.endsWith(".md") ? [full] : [];
  });
}

const DOCS = [join(PROJECT_ROOT, "README.md"), ...markdownFiles(join(PROJECT_ROOT, "docs"))];

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
    for (const doc of ["README.md", "docs/launch-contract.md", "docs/decisions"]) {
      expect(existsSync(join(PROJECT_ROOT, doc)), doc).toBe(true);
    }
  });

  it.each(DOCS.map((file) => [relative(PROJECT_ROOT, file), file]))("%s: every relative link resolves", (_name, file) => {
    const text = withoutCodeBlocks(readFileSync(file, "utf8"));
    const broken: string[] = [];
    for (const match of text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)) {
      const target = match[1] ?? "";
      if (/^[a-z]+:/i.test(target)) continue; // external: not checked offline
      const [pathPart = "", anchor] = target.split("#");
      const resolved = pathPart === "" ? file : resolve(dirname(file), pathPart);
      if (!existsSync(resolved)) {
        broken.push(target);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith(".md") && !anchorsOf(readFileSync(resolved, "utf8")).has(anchor)) {
        broken.push(target);
      }
    }
    expect(broken).toEqual([]);
  });

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
});
