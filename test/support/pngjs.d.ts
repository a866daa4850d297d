/**
 * The part of pngjs (installed as pureimage's dependency, without types) the screenshot test uses
 * to decode what the renderer wrote.
 */
declare module "pngjs" {
  export const PNG: {
    sync: {
      read(buffer: Buffer): { width: number; height: number; data: Buffer };
    };
  };
}
