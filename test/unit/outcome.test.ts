import { describe, expect, expectTypeOf, it } from "vitest";
import { failed, type Failed, type Outcome, type Succeeded } from "../../src/outcome.ts";

type Found = Outcome<{ id: string }, "not_found" | "ambiguous">;

function find(name: string): Found {
  if (name === "") return failed("not_found", "No handoff matches ''.");
  if (name === "f") return failed("ambiguous", "'f' names 2 handoffs.");
  return { ok: true, id: `id-${name}` };
}

describe("the one outcome type", () => {
  it("is a success with the result's fields or a failure with a code and its sentence", () => {
    expect(find("x")).toEqual({ ok: true, id: "id-x" });
    expect(find("")).toEqual({ ok: false, code: "not_found", message: "No handoff matches ''." });
    const outcome = find("f");
    if (outcome.ok) throw new Error("expected a failure");
    expectTypeOf(outcome.code).toEqualTypeOf<"not_found" | "ambiguous">();
    expect(outcome).toEqual({ ok: false, code: "ambiguous", message: "'f' names 2 handoffs." });
  });

  it("carries the fields a room adds to a code, which cannot override ok, code or message", () => {
    type Held = Succeeded<{ lease: string }> | Failed<"held", { holder: number }> | Failed<"io_error">;
    const held: Held = failed("held", "Held by 42.", { holder: 42 });
    expect(held).toEqual({ ok: false, code: "held", message: "Held by 42.", holder: 42 });
    const sneaky = failed("io_error", "Could not read it.", { ok: true, code: "other", message: "no" });
    expect(sneaky).toEqual({ ok: false, code: "io_error", message: "Could not read it." });
    if (!held.ok && held.code === "held") expectTypeOf(held.holder).toEqualTypeOf<number>();
  });
});
