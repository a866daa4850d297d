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

/**
 * Every character a shell may read specially, alone and inside a word, with the other ASCII
 * printables, control characters (newline, tab, carriage return, escape), quotes, non-ASCII and
 * the starts a shell or a program treats apart (`-`, `=`, `~`, `#`): for the quoting functions,
 * which must give each back exactly. `canary` is the file a command injection would create.
 */
export function metacharacterWords(canary: string): string[] {
  const printable = Array.from({ length: 0x7e - 0x20 + 1 }, (_, at) => String.fromCharCode(0x20 + at));
  const special = printable.filter((char) => !/[A-Za-z0-9]/.test(char));
  const controls = ["\n", "\t", "\r", "\u001b", "\u0001", "\u007f"];
  return [
    ...special,
    ...special.map((char) => `a${char}b`),
    ...controls.map((char) => `a${char}b`),
    special.join(""),
    printable.join(""),
    `line one\nline two\n`,
    `'$(touch ${canary})'`,
    `"$(touch ${canary})"`,
    `\\'; touch ${canary}; '`,
    "-n",
    "--help",
    "=ls",
    "a=b",
    "~root",
    "#comment",
    "ünïcödé 名前 🚀",
    "é'\"\\",
    "",
  ];
}
