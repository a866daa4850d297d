/**
 * `pi-handoff` from a checkout: `node scripts/pi-handoff.ts <command>` (Node 22.19+ strips the
 * types itself). The installed command is `bin/pi-handoff.mjs`, which loads the same `main` from
 * src/cli/cli.ts through Node's loader hooks (bin/native-loader.mjs); the CLI lives in src/
 * because scripts/ is not published.
 */
import { main } from "../src/cli/cli.ts";

process.exitCode = await main(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  execPath: process.execPath,
  ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
});
