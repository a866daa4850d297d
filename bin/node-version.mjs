// The Node this package needs, said in one line wherever an older one runs it: `pi-handoff`, the
// demo's launcher, and `npm install` in a checkout (its `prepare` step).
//
// Plain JavaScript with nothing newer than what old Node versions parse (see pi-handoff.mjs).
// Run as a script (`node bin/node-version.mjs --npm`), it says why npm warned EBADENGINE when npm
// itself runs on an older Node: npm scripts run on the project's own Node 22 (the `node`
// devDependency), which is all a checkout needs. It always exits 0: the install goes on.
import process from "node:process";
import { fileURLToPath } from "node:url";

export const MINIMUM = [22, 19];

/** Whether `version` ("20.20.2", "v22.23.3") is older than what Pi needs. */
export function tooOld(version) {
  const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
  return major < MINIMUM[0] || (major === MINIMUM[0] && minor < MINIMUM[1]);
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "--npm") {
  // npm names the Node it runs on in its user agent ("npm/11.19.1 node/v20.20.2 linux x64 ...");
  // `node` here is the project's own when the devDependencies are installed.
  const npmNode = /\bnode\/v?(\d+\.\d+\.\d+)/.exec(process.env.npm_config_user_agent ?? "")?.[1];
  if (npmNode !== undefined && tooOld(npmNode)) {
    process.stderr.write(
      `pi-handoff-worktree: npm runs on Node.js ${npmNode}, older than the ${MINIMUM.join(".")} Pi needs, hence the EBADENGINE warnings: npm run demo, npm test and npm run bench use the project's own Node 22 (the node devDependency), and Pi itself needs Node.js ${MINIMUM.join(".")} or later.\n`,
    );
  }
}
