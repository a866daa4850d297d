/**
 * The demo's git repository: a tiny but realistic project with three commits, made with the
 * scratch environment (so git never reads the user's ~/.gitconfig).
 */
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { execa } from "execa";

const GIT_TIMEOUT_MS = 15_000;

/** Runs git (no shell) in `cwd` with `env` only; returns stdout. */
export async function git(cwd: string, env: Record<string, string>, args: readonly string[]): Promise<string> {
  const result = await execa("git", args, { cwd, env, extendEnv: false, stdin: "ignore", timeout: GIT_TIMEOUT_MS });
  return result.stdout;
}

const README_V1 = `# arglist

Prints the command-line arguments it is given, one per line, numbered.
`;

const README_V2 = `${README_V1}
## Usage

    npm start -- first second third
`;

const PACKAGE_JSON = `${JSON.stringify(
  {
    name: "arglist",
    version: "0.1.0",
    private: true,
    type: "module",
    main: "src/app.js",
    scripts: { start: "node src/app.js" },
  },
  null,
  2,
)}
`;

const APP_JS = `// Entry point: prints the arguments it was given, one per line, numbered.

export function formatArguments(args) {
  return args.map((arg, index) => \`\${index + 1}. \${arg}\`).join("\\n");
}

console.log(formatArguments(process.argv.slice(2)));
`;

const COMMITS: ReadonlyArray<{ message: string; files: Record<string, string> }> = [
  { message: "Start the arglist project", files: { "README.md": README_V1, "package.json": PACKAGE_JSON } },
  { message: "Add the entry point", files: { "src/app.js": APP_JS } },
  { message: "Document how to run it", files: { "README.md": README_V2 } },
];

export async function createScratchRepo(repo: string, env: Record<string, string>): Promise<void> {
  await mkdir(repo, { recursive: true });
  await git(repo, env, ["init", "--quiet", "--initial-branch=main"]);
  for (const commit of COMMITS) {
    for (const [file, content] of Object.entries(commit.files)) {
      await mkdir(dirname(join(repo, file)), { recursive: true });
      await writeFile(join(repo, file), content);
    }
    await git(repo, env, ["add", "--", ...Object.keys(commit.files)]);
    await git(repo, env, ["commit", "--quiet", "--no-verify", "-m", commit.message]);
  }
}
