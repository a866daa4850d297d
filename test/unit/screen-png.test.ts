/**
 * The demo's screenshot renderer (scripts/lib/screen-png.ts) as a pure function: a small ANSI
 * screen in, a PNG out, decoded again with pngjs and checked by size and by pixel colour (the 16
 * basic colours, 256 colours, truecolor, reverse), with escape sequences never drawn as text.
 */
import { PNG } from "pngjs";
import { describe, expect, it } from "vitest";
import {
  BACKGROUND,
  color256,
  FOREGROUND,
  layoutScreens,
  PALETTE_16,
  parseAnsiScreen,
  renderScreenPng,
  type Rgb,
} from "../../scripts/lib/screen-png.ts";

/** DejaVu Sans Mono at the default 15 px: a 0.602 em advance and a 1.164 em line. */
const CELL_WIDTH = 9;
const CELL_HEIGHT = 18;
const MARGIN = 16;
const PADDING = 8;
const TITLE = CELL_HEIGHT + PADDING;

const FULL_BLOCK = "\u2588";
const SCREEN = [
  // Row 0: basic background, 256-colour background, truecolor background, then a plain space.
  `\u001b[42m \u001b[48;5;196m \u001b[48;2;10;20;30m \u001b[0m `,
  // Row 1: full blocks in a basic, a bright, a 256 and a truecolor foreground, then reversed default.
  `\u001b[31m${FULL_BLOCK}\u001b[94m${FULL_BLOCK}\u001b[38;5;46m${FULL_BLOCK}\u001b[38;2;1;2;250m${FULL_BLOCK}\u001b[0m\u001b[7m \u001b[0m`,
  // Row 2: a window title (OSC) and an unknown CSI sequence, neither of them text.
  `\u001b]0;a title\u0007\u001b[2J`,
].join("\n");

function decode(png: Buffer): { width: number; height: number; pixel(x: number, y: number): Rgb } {
  const image = PNG.sync.read(png);
  return {
    width: image.width,
    height: image.height,
    pixel: (x, y) => {
      const at = (y * image.width + x) * 4;
      return [image.data[at] ?? -1, image.data[at + 1] ?? -1, image.data[at + 2] ?? -1];
    },
  };
}

describe("renderScreenPng", () => {
  it("draws a small ANSI screen as a PNG of the expected size with the expected colours", async () => {
    const png = await renderScreenPng([{ title: "parent", text: SCREEN }]);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    const image = decode(png);
    // 5 columns (the longest row), 2 rows (the third draws nothing and is trimmed).
    expect({ width: image.width, height: image.height }).toEqual({
      width: 2 * MARGIN + 2 * PADDING + 5 * CELL_WIDTH,
      height: 2 * MARGIN + TITLE + 2 * PADDING + 2 * CELL_HEIGHT,
    });
    const centre = (column: number, row: number): Rgb =>
      image.pixel(MARGIN + PADDING + column * CELL_WIDTH + 4, MARGIN + TITLE + PADDING + row * CELL_HEIGHT + 9);

    expect(image.pixel(0, 0)).toEqual(BACKGROUND);
    expect(centre(0, 0)).toEqual(PALETTE_16[2]);
    expect(centre(1, 0)).toEqual([255, 0, 0]);
    expect(centre(2, 0)).toEqual([10, 20, 30]);
    expect(centre(3, 0)).toEqual(BACKGROUND);
    expect(centre(0, 1)).toEqual(PALETTE_16[1]);
    expect(centre(1, 1)).toEqual(PALETTE_16[12]);
    expect(centre(2, 1)).toEqual([0, 255, 0]);
    expect(centre(3, 1)).toEqual([1, 2, 250]);
    // Reverse video with default colours: the cell takes the foreground colour.
    expect(centre(4, 1)).toEqual(FOREGROUND);
  });

  it("puts screens side by side or stacked, each under its own title bar", async () => {
    const panels = [
      { title: "parent", text: "ab" },
      { title: "child", text: "abc\nd" },
    ];
    const stacked = decode(await renderScreenPng(panels));
    const side = decode(await renderScreenPng(panels, { layout: "side-by-side" }));
    const panelWidth = 2 * PADDING + 3 * CELL_WIDTH;
    const panelHeight = TITLE + 2 * PADDING + 2 * CELL_HEIGHT;
    expect([stacked.width, stacked.height]).toEqual([2 * MARGIN + panelWidth, 2 * MARGIN + 2 * panelHeight + MARGIN]);
    expect([side.width, side.height]).toEqual([2 * MARGIN + 2 * panelWidth + MARGIN, 2 * MARGIN + panelHeight]);
    expect(layoutScreens(panels, { layout: "side-by-side" }).origins).toEqual([
      { x: MARGIN + PADDING, y: MARGIN + TITLE + PADDING },
      { x: MARGIN + panelWidth + MARGIN + PADDING, y: MARGIN + TITLE + PADDING },
    ]);
    // The title bar is lighter than the screen below it.
    const [r] = side.pixel(MARGIN + panelWidth - 2, MARGIN + 2);
    expect(r).toBeGreaterThan(BACKGROUND[0]);
  });
});

describe("parseAnsiScreen", () => {
  it("keeps SGR state across lines, resets on 0, and maps 256 colours like xterm", () => {
    const grid = parseAnsiScreen("\u001b[1;33ma\nb\u001b[0mc");
    expect(grid.map((row) => row.map((cell) => cell.ch).join(""))).toEqual(["a", "bc"]);
    expect(grid[1]?.[0]?.style).toMatchObject({ bold: true, fg: PALETTE_16[3] });
    expect(grid[1]?.[1]?.style).toMatchObject({ bold: false, fg: undefined });
    expect([color256(16), color256(21), color256(231), color256(232), color256(255)]).toEqual([
      [0, 0, 0],
      [0, 0, 255],
      [255, 255, 255],
      [8, 8, 8],
      [238, 238, 238],
    ]);
  });
});
