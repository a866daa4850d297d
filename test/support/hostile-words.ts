/**
 * Words a shell would act on if anything were left unquoted: each launch test passes them through a
 * real shell and checks they arrive unchanged and ran nothing (`canary` is the file a command
 * injection would create).
 */
export function hostileWords(canary: string): string[] {
  return [
    "plain",
    "with space",
    "it's",
    'double "quoted"',
    `$(touch ${canary})`,
    `\`touch ${canary}\``,
    `; touch ${canary}`,
    `| touch ${canary} &`,
    "back\\slash",
    "$HOME and ${PATH}",
    "*glob?[x]",
    "ünïcödé-名前-🚀",
    "-leading-dash",
    "!history",
    "~tilde",
    "'",
    "''",
    "",
  ];
}
