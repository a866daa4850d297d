// The demo's launcher (the demo itself is scripts/demo-main.ts): `npm run demo`, or
// `node scripts/demo.ts` (a link to this file) on any Node.
//
// Plain JavaScript with nothing newer than what old Node versions parse, so that on a Node too old
// to strip TypeScript types it says in one line what to run instead of failing with a stack trace.
import process from "node:process";

const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `demo: needs Node.js 22.19 or later (like Pi), but this is Node.js ${process.versions.node}; run npm run demo, which starts it on the project's own Node 22 (the node devDependency, installed by npm install).\n`,
  );
  process.exit(1);
}
await import("./demo-main.ts");
