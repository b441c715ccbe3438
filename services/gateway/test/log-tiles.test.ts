// The tlog-tiles index paths a tile client sends (C2SP tlog-tiles: the index in 3-digit path
// elements, all but the last prefixed with x; `.p/<width>` for a partial tile), and the ones it
// must not be able to pass off as a tile.
import { describe, expect, it } from "vitest";
import { parseTilePath } from "../src/routes/log.ts";

describe("parseTilePath", () => {
  it("reads full and partial tile indexes", () => {
    expect(parseTilePath(["000"])).toEqual({ index: 0, width: 256 });
    expect(parseTilePath(["067"])).toEqual({ index: 67, width: 256 });
    expect(parseTilePath(["x001", "x234", "067"])).toEqual({ index: 1_234_067, width: 256 });
    expect(parseTilePath(["x001", "234.p", "12"])).toEqual({ index: 1234, width: 12 });
    expect(parseTilePath(["000.p", "255"])).toEqual({ index: 0, width: 255 });
  });

  it("refuses what is not one", () => {
    for (const bad of [
      [],
      ["67"],
      ["0067"],
      ["x067"],
      ["001", "002"],
      ["000.p"],
      ["000.p", "0"],
      ["000.p", "256"],
      ["000.p", "012"],
      ["000", "p", "1"],
      ["../x"],
    ])
      expect(parseTilePath(bad), bad.join("/")).toBeUndefined();
  });
});
