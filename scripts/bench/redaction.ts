/**
 * Benchmark (h): secret redaction (`redactSecrets`, src/session/redact.ts) on the inputs that made
 * the old regular expressions backtrack quadratically (`a.a.a...`: 4.5-8.7 s for 64 K characters,
 * Pi's event loop blocked), against ordinary prose of the same size (the baseline). Two ratios
 * each: to the baseline at 128 K characters, and 128 K against 64 K (about 2 for linear time, 4 for
 * quadratic).
 */
import { redactSecrets } from "../../src/session/redact.ts";

export interface RedactionBenchResult {
  sizes: number[];
  /** Median ms per input kind and size. */
  ms: Record<string, number[]>;
  /** Per input kind: its 128 K time over the prose's 128 K time. */
  vsProse: Record<string, number>;
  /** Per input kind: 128 K time over 64 K time. */
  doubling: Record<string, number>;
}

const PROSE =
  "The parser keeps a token per line; see https://example.com/docs for the password rules and the api key notes. ";

const INPUTS: Record<string, (size: number) => string> = {
  prose: (size) => PROSE.repeat(Math.ceil(size / PROSE.length)).slice(0, size),
  "a.a.a": (size) => "a.".repeat(size / 2),
  tokentoken: (size) => "token".repeat(Math.ceil(size / 5)).slice(0, size),
  "eyJ-eyJ-": (size) => "eyJ-".repeat(size / 4),
  "a://b:": (size) => "a://b:".repeat(Math.ceil(size / 6)).slice(0, size),
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

export async function measureRedaction(options: { runs: number; sizes?: number[] }): Promise<RedactionBenchResult> {
  const sizes = options.sizes ?? [65_536, 131_072];
  const ms: Record<string, number[]> = {};
  // Once untimed, so the first kind measured does not pay for compiling the scanners.
  for (const make of Object.values(INPUTS)) redactSecrets(make(4_096));
  for (const [kind, make] of Object.entries(INPUTS)) {
    ms[kind] = sizes.map((size) => {
      const text = make(size);
      const runs: number[] = [];
      for (let run = 0; run < options.runs; run += 1) {
        const started = performance.now();
        redactSecrets(text);
        runs.push(performance.now() - started);
      }
      return round(median(runs));
    });
  }
  const last = sizes.length - 1;
  const prose = ms.prose?.[last] ?? 0;
  const vsProse: Record<string, number> = {};
  const doubling: Record<string, number> = {};
  for (const [kind, times] of Object.entries(ms)) {
    vsProse[kind] = prose === 0 ? Number.NaN : round((times[last] ?? 0) / prose);
    doubling[kind] = (times[0] ?? 0) === 0 ? Number.NaN : round((times[last] ?? 0) / (times[0] ?? 1));
  }
  return { sizes, ms, vsProse, doubling };
}
