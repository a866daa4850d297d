/**
 * Property tests for the Herdr output decoder (src/mux/herdr/protocol.ts), with fast-check:
 * - anything at all on either stream (random text, random JSON, JSON of the wrong shape) decodes to
 *   one of the four typed outcomes, never a throw;
 * - a valid envelope generated from the schemas decodes to exactly what was encoded, with unknown
 *   keys tolerated, a warning line before it, on stdout or (an error) on either stream;
 * - a valid envelope with any one field made null or of the wrong type, a missing id, or the wrong
 *   result type is `malformed`, never a result.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import {
  decodeHerdrOutput,
  OkResultSchema,
  PaneInfoResultSchema,
  PaneListSchema,
  PaneProcessInfoSchema,
  WorkspaceInfoResultSchema,
  WorkspaceListSchema,
  WorktreeCreatedSchema,
  WorktreeListSchema,
  WorktreeOpenedSchema,
  WorktreeRemovedSchema,
  type HerdrOutput,
} from "../../src/mux/herdr/protocol.ts";

const RUNS = { numRuns: 300 };

// Herdr's id shapes: w<N>, w<N>:t<N>, w<N>:p<N> over 0-9 and A-Z without I, L, O, U.
const digits = fc.stringMatching(/^[0-9A-HJKMNP-TV-Z]{1,4}$/);
const workspaceId = digits.map((d) => `w${d}`);
const tabId = fc.tuple(digits, digits).map(([w, t]) => `w${w}:t${t}`);
const paneId = fc.tuple(digits, digits).map(([w, p]) => `w${w}:p${p}`);
const count = fc.nat({ max: 10_000 });
const text = fc.string({ maxLength: 40 });
const pid = fc.integer({ min: 1, max: 4_194_304 });

const worktreeOfWorkspace = fc.record({
  repo_key: text,
  repo_name: text,
  repo_root: text,
  checkout_path: text,
  is_linked_worktree: fc.boolean(),
});
const workspace = fc.record(
  {
    workspace_id: workspaceId,
    number: count,
    label: text,
    focused: fc.boolean(),
    pane_count: count,
    tab_count: count,
    active_tab_id: tabId,
    agent_status: text,
    worktree: worktreeOfWorkspace,
  },
  {
    requiredKeys: [
      "workspace_id",
      "number",
      "label",
      "focused",
      "pane_count",
      "tab_count",
      "active_tab_id",
      "agent_status",
    ],
  },
);
const pane = fc.record(
  {
    pane_id: paneId,
    terminal_id: text,
    workspace_id: workspaceId,
    tab_id: tabId,
    focused: fc.boolean(),
    cwd: text,
    foreground_cwd: text,
    agent_status: text,
    revision: count,
  },
  { requiredKeys: ["pane_id", "terminal_id", "workspace_id", "tab_id", "focused", "agent_status", "revision"] },
);
const tab = fc.record({ tab_id: tabId, workspace_id: workspaceId });
const worktree = fc.record(
  {
    path: fc.string({ minLength: 1, maxLength: 40 }),
    branch: text,
    is_bare: fc.boolean(),
    is_detached: fc.boolean(),
    is_prunable: fc.boolean(),
    is_linked_worktree: fc.boolean(),
    open_workspace_id: workspaceId,
    label: text,
  },
  { requiredKeys: ["path", "is_bare", "is_detached", "is_prunable", "is_linked_worktree", "label"] },
);
const foregroundProcess = fc.record(
  { pid, name: text, argv0: text, argv: fc.array(text, { maxLength: 4 }), cmdline: text, cwd: text },
  { requiredKeys: ["pid", "name"] },
);
const processInfo = fc.record(
  {
    pane_id: paneId,
    shell_pid: pid,
    foreground_process_group_id: pid,
    tty: text,
    foreground_processes: fc.array(foregroundProcess, { maxLength: 3 }),
  },
  // Always present here, so the decoded value equals the encoded one (absent decodes to [], tested below).
  { requiredKeys: ["pane_id", "foreground_processes"] },
);
const source = fc.record(
  { repo_key: text, repo_name: text, repo_root: text, source_checkout_path: text, source_workspace_id: workspaceId },
  { requiredKeys: ["repo_key", "repo_name", "repo_root", "source_checkout_path"] },
);

/** Each result type with its schema: what a call expects, and what Herdr would print for it. */
const RESULTS: Array<{ type: string; schema: z.ZodType<unknown>; result: fc.Arbitrary<Record<string, unknown>> }> = [
  {
    type: "workspace_info",
    schema: WorkspaceInfoResultSchema,
    result: fc.record({ type: fc.constant("workspace_info"), workspace }),
  },
  {
    type: "workspace_list",
    schema: WorkspaceListSchema,
    result: fc.record({ type: fc.constant("workspace_list"), workspaces: fc.array(workspace, { maxLength: 3 }) }),
  },
  { type: "pane_info", schema: PaneInfoResultSchema, result: fc.record({ type: fc.constant("pane_info"), pane }) },
  {
    type: "pane_list",
    schema: PaneListSchema,
    result: fc.record({ type: fc.constant("pane_list"), panes: fc.array(pane, { maxLength: 3 }) }),
  },
  {
    type: "pane_process_info",
    schema: PaneProcessInfoSchema,
    result: fc.record({ type: fc.constant("pane_process_info"), process_info: processInfo }),
  },
  {
    type: "worktree_created",
    schema: WorktreeCreatedSchema,
    result: fc.record({ type: fc.constant("worktree_created"), workspace, tab, root_pane: pane, worktree }),
  },
  {
    type: "worktree_opened",
    schema: WorktreeOpenedSchema,
    result: fc.record({
      type: fc.constant("worktree_opened"),
      workspace,
      tab,
      root_pane: pane,
      worktree,
      already_open: fc.boolean(),
    }),
  },
  {
    type: "worktree_list",
    schema: WorktreeListSchema,
    result: fc.record({ type: fc.constant("worktree_list"), source, worktrees: fc.array(worktree, { maxLength: 3 }) }),
  },
  {
    type: "worktree_removed",
    schema: WorktreeRemovedSchema,
    result: fc.record({
      type: fc.constant("worktree_removed"),
      workspace_id: workspaceId,
      path: text,
      forced: fc.boolean(),
    }),
  },
  { type: "ok", schema: OkResultSchema, result: fc.constant({ type: "ok" }) },
];

const anyCase = fc.constantFrom(...RESULTS.keys()).chain((index) => {
  const entry = RESULTS[index] as (typeof RESULTS)[number];
  return fc.record({ index: fc.constant(index), result: entry.result, id: text });
});

const SCHEMAS = RESULTS.map((entry) => entry.schema);

/** The decoder's contract, whatever the input: one of four typed outcomes, each with its fields. */
function expectTyped(output: HerdrOutput<unknown>): void {
  switch (output.kind) {
    case "result":
      expect(output.result).toBeDefined();
      break;
    case "error":
      expect(typeof output.code).toBe("string");
      expect(output.code.length).toBeGreaterThan(0);
      expect(typeof output.message).toBe("string");
      break;
    case "malformed":
      expect(typeof output.detail).toBe("string");
      break;
    case "silent":
      break;
    default:
      throw new Error(`untyped outcome ${JSON.stringify(output)}`);
  }
}

/** Every path to an object key inside `value` (not array indices: arrays may be empty). */
function keyPaths(value: unknown, prefix: string[] = []): string[][] {
  if (typeof value !== "object" || value === null) return [];
  if (Array.isArray(value)) return value.flatMap((item, index) => keyPaths(item, [...prefix, String(index)]));
  return Object.entries(value).flatMap(([key, child]) => [[...prefix, key], ...keyPaths(child, [...prefix, key])]);
}

function withValueAt(value: unknown, path: readonly string[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let cursor: Record<string, unknown> = copy;
  for (const key of path.slice(0, -1)) cursor = cursor[key] as Record<string, unknown>;
  cursor[path.at(-1) ?? ""] = replacement;
  return copy;
}

/** A value of another JSON type than `value`'s. */
function wrongTypeFor(value: unknown): unknown {
  if (typeof value === "string") return 7;
  if (typeof value === "number") return "7";
  if (typeof value === "boolean") return "true";
  if (Array.isArray(value)) return { not: "an array" };
  return ["not", "an", "object"];
}

describe("the Herdr envelope decoder, for any input", () => {
  it("never throws on random text on either stream", () => {
    const noise = fc.oneof(
      fc.string(),
      fc.string({ unit: "binary" }),
      fc.lorem(),
      fc.array(fc.string(), { maxLength: 5 }).map((lines) => lines.join("\n")),
    );
    fc.assert(
      fc.property(noise, noise, fc.constantFrom(...SCHEMAS), (stdout, stderr, schema) => {
        expectTyped(decodeHerdrOutput({ stdout, stderr }, schema));
      }),
      RUNS,
    );
  });

  it("never throws on random JSON, and yields a result only for a value the schema accepts", () => {
    const json = fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value));
    const enveloped = fc
      .record({ id: fc.oneof(text, fc.integer()), result: fc.jsonValue({ maxDepth: 3 }) })
      .map((value) => JSON.stringify(value));
    const stream = fc.oneof(json, enveloped, fc.constant(""));
    fc.assert(
      fc.property(stream, stream, fc.constantFrom(...RESULTS.keys()), (stdout, stderr, index) => {
        const schema = SCHEMAS[index] as z.ZodType<unknown>;
        const output = decodeHerdrOutput({ stdout, stderr }, schema);
        expectTyped(output);
        if (output.kind === "result") expect(schema.safeParse(output.result).success).toBe(true);
        if (stdout.trim() === "" && stderr.trim() === "") expect(output).toEqual({ kind: "silent" });
      }),
      RUNS,
    );
  });
});

describe("valid envelopes generated from the schemas", () => {
  it("decode to exactly what was encoded", () => {
    fc.assert(
      fc.property(anyCase, ({ index, result, id }) => {
        const schema = SCHEMAS[index] as z.ZodType<unknown>;
        expect(decodeHerdrOutput({ stdout: `${JSON.stringify({ id, result })}\n`, stderr: "" }, schema)).toEqual({
          kind: "result",
          result,
        });
      }),
      RUNS,
    );
  });

  it("decode the same with unknown keys added, a warning line before, and noise on stderr", () => {
    const extra = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }).map((key) => `x_${key}`),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 3 },
    );
    fc.assert(
      fc.property(anyCase, extra, fc.lorem(), ({ index, result, id }, extras, noise) => {
        const schema = SCHEMAS[index] as z.ZodType<unknown>;
        const line = JSON.stringify({ ...extras, id, result: { ...extras, ...result } });
        const output = decodeHerdrOutput({ stdout: `warning: ${noise}\n${line}\n`, stderr: noise }, schema);
        expect(output).toEqual({ kind: "result", result });
      }),
      RUNS,
    );
  });

  it("an error envelope is an error from stderr, or in-band on stdout, whatever the other stream holds", () => {
    const code = fc.string({ minLength: 1, maxLength: 30 });
    const notJson = fc.lorem().filter((value) => !value.includes("{"));
    fc.assert(
      fc.property(code, text, text, notJson, fc.constantFrom(...SCHEMAS), (errorCode, message, id, noise, schema) => {
        const envelope = JSON.stringify({ id, error: { code: errorCode, message } });
        const expected = { kind: "error", code: errorCode, message };
        expect(decodeHerdrOutput({ stdout: "", stderr: `${envelope}\n` }, schema)).toEqual(expected);
        expect(decodeHerdrOutput({ stdout: `${envelope}\n`, stderr: "" }, schema)).toEqual(expected);
        // Text that is not JSON on stdout does not hide the error on stderr.
        expect(decodeHerdrOutput({ stdout: noise, stderr: envelope }, schema)).toEqual(expected);
      }),
      RUNS,
    );
  });

  it("an absent foreground_processes list decodes as empty (Herdr omits an empty list)", () => {
    fc.assert(
      fc.property(processInfo, text, (info, id) => {
        const { foreground_processes: _omitted, ...rest } = info;
        const output = decodeHerdrOutput(
          { stdout: JSON.stringify({ id, result: { type: "pane_process_info", process_info: rest } }), stderr: "" },
          PaneProcessInfoSchema,
        );
        expect(output).toEqual({
          kind: "result",
          result: { type: "pane_process_info", process_info: { ...rest, foreground_processes: [] } },
        });
      }),
      RUNS,
    );
  });
});

describe("broken envelopes are malformed, never a result", () => {
  it("any one field of the result made null or of the wrong type", () => {
    fc.assert(
      fc.property(
        anyCase.chain((value) => {
          const paths = keyPaths(value.result);
          return fc.record({ value: fc.constant(value), path: fc.constantFrom(...paths), wrongType: fc.boolean() });
        }),
        ({ value: { index, result, id }, path, wrongType }) => {
          const original = path.reduce<unknown>((cursor, key) => (cursor as Record<string, unknown>)[key], result);
          const broken = withValueAt(result, path, wrongType ? wrongTypeFor(original) : null);
          const output = decodeHerdrOutput(
            { stdout: JSON.stringify({ id, result: broken }), stderr: "" },
            SCHEMAS[index] as z.ZodType<unknown>,
          );
          expect(output.kind, `${path.join(".")} -> ${JSON.stringify(broken).slice(0, 200)}`).toBe("malformed");
        },
      ),
      RUNS,
    );
  });

  it("a missing or non-string id, a missing result, or another result type than the call expects", () => {
    fc.assert(
      fc.property(
        anyCase,
        fc.constantFrom(...RESULTS.keys()),
        fc.integer(),
        ({ index, result, id }, other, numericId) => {
          const schema = SCHEMAS[index] as z.ZodType<unknown>;
          const decode = (value: unknown) =>
            decodeHerdrOutput({ stdout: JSON.stringify(value), stderr: "" }, schema).kind;
          expect(decode({ result })).toBe("malformed");
          expect(decode({ id: numericId, result })).toBe("malformed");
          expect(decode({ id })).toBe("malformed");
          if ((RESULTS[other] as (typeof RESULTS)[number]).type !== (RESULTS[index] as (typeof RESULTS)[number]).type) {
            // The same envelope handed to a call that expects another result.
            expect(
              decodeHerdrOutput(
                { stdout: JSON.stringify({ id, result }), stderr: "" },
                SCHEMAS[other] as z.ZodType<unknown>,
              ).kind,
            ).toBe("malformed");
          }
        },
      ),
      RUNS,
    );
  });
});
