/**
 * The one outcome type: what an operation that can fail answers, as a value.
 *
 * Invariants:
 * - Success is `{ ok: true }` beside the result's own fields; a failure is `{ ok: false, code,
 *   message }` (plus the fields a room adds to some codes), never an exception.
 * - Each room declares its codes as a union of string literals next to its operation (e.g.
 *   `FocusFailure` in relaunch/focus.ts), so a caller's `switch` over `code` is checked whole.
 * - `message` is the failure's sentence as the room words it; a surface that words codes itself
 *   (the handoff's notice.ts, from its `RefusalCode`s) does so in one place.
 * - A leaf: imports nothing, so every room may use it.
 */

/** No fields added to a failure. */
export type NoExtra = Record<never, never>;

/** A success: `ok` beside the result's fields. */
export type Succeeded<T extends object = NoExtra> = { ok: true } & T;

/** A failure with a code of its room and its sentence, plus what the room adds (`Extra`). */
export type Failed<Code extends string, Extra extends object = NoExtra> = {
  ok: false;
  code: Code;
  message: string;
} & Extra;

/** Success with `T`'s fields, or a failure with one of `Code`. Richer failures: a union of `Failed`s beside a `Succeeded`. */
export type Outcome<T extends object, Code extends string, Extra extends object = NoExtra> =
  | Succeeded<T>
  | Failed<Code, Extra>;

/** A failure value (`extra`: the fields the room adds to this code). */
export function failed<Code extends string>(code: Code, message: string): Failed<Code>;
export function failed<Code extends string, Extra extends object>(
  code: Code,
  message: string,
  extra: Extra,
): Failed<Code, Extra>;
export function failed<Code extends string, Extra extends object>(
  code: Code,
  message: string,
  extra?: Extra,
): Failed<Code, Extra | NoExtra> {
  return { ...extra, ok: false, code, message };
}
