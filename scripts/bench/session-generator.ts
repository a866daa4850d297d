/**
 * A large, realistic Pi session file for benchmarks: a long active path with abandoned branches
 * hanging off it, written as Pi 1.6 writes entries (version 3, 8-hex ids, parent links).
 *
 * Invariant: deterministic for a given size (seeded), so runs compare like with like.
 */
import { createWriteStream } from "node:fs";
import { once } from "node:events";

export interface GeneratedSession {
  file: string;
  bytes: number;
  entries: number;
  activeLeaf: string;
  activePathEntries: number;
}

function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 0x100000000;
  };
}

const WORDS =
  "the handoff worktree session branch commit parser token cache test build review refactor module interface error".split(
    " ",
  );

export async function generateSession(options: {
  file: string;
  cwd: string;
  entries: number;
  targetBytes: number;
}): Promise<GeneratedSession> {
  const random = seededRandom(42);
  const textBytes = Math.max(40, Math.floor(options.targetBytes / options.entries) - 400);
  const text = (n: number) => {
    const words: string[] = [];
    let length = 0;
    while (length < n) {
      const word = WORDS[Math.floor(random() * WORDS.length)] ?? "x";
      words.push(word);
      length += word.length + 1;
    }
    return words.join(" ");
  };
  const out = createWriteStream(options.file);
  let bytes = 0;
  const write = async (value: unknown): Promise<void> => {
    const line = `${JSON.stringify(value)}\n`;
    bytes += Buffer.byteLength(line);
    if (!out.write(line)) await once(out, "drain");
  };
  let idCounter = 0;
  const newId = () => (0x10000000 + idCounter++).toString(16).slice(-8);
  const timestamp = new Date(Date.UTC(2026, 10, 1)).toISOString();
  await write({ type: "session", version: 3, id: "01a22c00-0000-7000-8000-000000000000", timestamp, cwd: options.cwd });
  let activeParent: string | null = null;
  let written = 0;
  let activePathEntries = 0;
  const message = (id: string, parentId: string | null, role: "user" | "assistant") => ({
    type: "message",
    id,
    parentId,
    timestamp,
    message:
      role === "user"
        ? { role, content: [{ type: "text", text: text(textBytes) }], timestamp: 1796000000000 }
        : {
            role,
            content: [{ type: "text", text: text(textBytes) }],
            api: "faux",
            provider: "faux",
            model: "faux-1",
            usage: {
              input: 10,
              output: 10,
              cacheRead: 0,
              cacheWrite: 0,
              totalTokens: 20,
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
            },
            stopReason: "stop",
            timestamp: 1796000000000,
          },
  });
  while (written < options.entries) {
    // Every few turns, an abandoned branch of 4 entries forks off the current point (as /tree does).
    if (activeParent !== null && random() < 0.1 && written + 4 <= options.entries) {
      let branchParent: string = activeParent;
      for (let i = 0; i < 4; i++) {
        const id = newId();
        await write(message(id, branchParent, i % 2 === 0 ? "user" : "assistant"));
        branchParent = id;
        written++;
      }
      continue;
    }
    const id = newId();
    await write(message(id, activeParent, activePathEntries % 2 === 0 ? "user" : "assistant"));
    activeParent = id;
    activePathEntries++;
    written++;
  }
  out.end();
  await once(out, "close");
  return { file: options.file, bytes, entries: written, activeLeaf: activeParent ?? "", activePathEntries };
}
