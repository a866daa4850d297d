/**
 * The questions `/handoffs` asks before a change (issue 41, point 3): whatever a reflexive Enter
 * picks (a select's first option, an empty line) or Escape (no answer) never goes on.
 */
import { describe, expect, it } from "vitest";
import {
  answerProceeds,
  branchDeletionQuestion,
  landQuestion,
  mistypedName,
  pruneQuestion,
  questionOptions,
  rebaseQuestion,
  removalQuestion,
  strategyQuestion,
  type ChangeQuestion,
} from "../../src/cli/handoffs-questions.ts";

const choices: ChangeQuestion[] = [
  removalQuestion("feat/x", ["The worktree /w would be deleted."], false),
  branchDeletionQuestion({ question: "Also delete branch feat/x?", detail: "Everything on it is in main." }),
  landQuestion("feat/x", "main", ["main: fast-forward"]),
  rebaseQuestion("feat/x", "main", ["2 commits"]),
  pruneQuestion(["  retire handoff x"]),
];

describe("the questions before a change", () => {
  it("keep things on Enter (the first option) and on Escape; go on only on the option that says so", () => {
    for (const question of choices) {
      if (question.code !== "choose") throw new Error("a choice expected");
      const [first, second] = questionOptions(question);
      expect(answerProceeds(question, first)).toBe(false);
      expect(answerProceeds(question, undefined)).toBe(false);
      expect(answerProceeds(question, second)).toBe(true);
    }
    expect(strategyQuestion("It cannot be fast-forwarded.", ["rebase", "merge", "squash"])).toEqual({
      title: "It cannot be fast-forwarded.\nLand how?",
      options: ["Cancel: land nothing", "rebase", "merge", "squash"],
    });
  });

  it("where --force would be needed, go on only on the branch name typed; say so when another text was typed", () => {
    const question = removalQuestion("feat/x", ["Would be lost for good (1 file with uncommitted work):"], true);
    expect(question.code).toBe("type_name");
    for (const answer of [undefined, "", "   ", "y", "Yes", "feat/", "feat/x/"])
      expect(answerProceeds(question, answer)).toBe(false);
    expect(answerProceeds(question, "feat/x")).toBe(true);
    expect(answerProceeds(question, " feat/x ")).toBe(true);
    expect(mistypedName(question, undefined)).toBeUndefined();
    expect(mistypedName(question, "")).toBeUndefined();
    expect(mistypedName(question, "feat/x")).toBeUndefined();
    expect(mistypedName(question, "y")).toBe('"y" is not feat/x; nothing was changed.');
  });
});
