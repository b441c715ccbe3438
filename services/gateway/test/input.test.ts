import { describe, expect, it } from "vitest";
import { duplicateKey, idOf, inputProblem, LIMITS, timestampParam } from "../src/input.ts";

describe("duplicateKey", () => {
  it.each([
    ['{"a":1,"b":2}', undefined],
    ['{"a":1,"a":2}', ["a"]],
    ['{"x":[{"a":1},{"b":1,"b":2}]}', ["x", "1", "b"]],
    ['[{"a":1},{"a":1}]', undefined],
    ['{"a\\"b":1,"a\\"b":2}', ['a"b']],
    ['{"\\u0061":1,"a":2}', ["a"]],
    ['{"k":"a,\\"b\\":{","b":1}', undefined],
    ['{"o":{"p":1},"p":2}', undefined],
    ['{"a\\\\":1,"a\\\\":2}', ["a\\"]],
    ['{"k":"x\\\\","k":1}', ["k"]],
    ['{"k":"\\\\\\"","j":[1,{"k":2,"k":3}]}', ["j", "1", "k"]],
    [`{"t":"${"x".repeat(5000)}","t":1}`, ["t"]],
  ])("%s → %j", (text, path) => {
    JSON.parse(text); // the input is always valid JSON
    expect(duplicateKey(text)).toEqual(path);
  });
});

describe("inputProblem", () => {
  it("finds NULs and lone surrogates in values and keys, with their path", () => {
    expect(inputProblem({ a: ["ok", "x\u0000"] })).toMatchObject({ path: ["a", 1], code: "invalid_string" });
    expect(inputProblem({ a: { "\ud800": 1 } })).toMatchObject({ path: ["a"], code: "invalid_key" });
    expect(inputProblem({ a: "\udc00" })).toMatchObject({ path: ["a"] });
    expect(inputProblem({ a: "😀 a pair is fine" })).toBeUndefined();
  });

  it("bounds depth, keys, items and numbers", () => {
    const nest = (d: number): unknown => (d === 0 ? 1 : { n: nest(d - 1) });
    expect(inputProblem(nest(LIMITS.depth))).toBeUndefined();
    expect(inputProblem(nest(LIMITS.depth + 1))).toMatchObject({ code: "too_deep", path: Array(LIMITS.depth).fill("n") });
    expect(inputProblem(Object.fromEntries(Array.from({ length: LIMITS.keys + 1 }, (_, i) => [`k${i}`, i])))).toMatchObject({
      code: "too_big",
      path: [],
    });
    expect(inputProblem({ l: Array(LIMITS.items + 1).fill(0) })).toMatchObject({ code: "too_big", path: ["l"] });
    expect(inputProblem({ n: Infinity })).toMatchObject({ path: ["n"] });
    expect(inputProblem({ n: 2 ** 53 })).toMatchObject({ path: ["n"] });
    expect(inputProblem({ n: -(2 ** 53 - 1), f: 0.5 })).toBeUndefined();
  });
});

describe("ids and timestamps", () => {
  it("an id must carry its own prefix and a ULID", () => {
    const ver = idOf("verification");
    expect(ver.safeParse("ver_01KGQ3Z3Y8R5F6G7H8J9K0M1N2").success).toBe(true);
    for (const bad of [
      "vreq_01KGQ3Z3Y8R5F6G7H8J9K0M1N2",
      "ver_01KGQ3Z3Y8R5F6G7H8J9K0M1NU",
      "ver_01kgq3z3y8r5f6g7h8j9k0m1n2",
      "ver_",
      "ver_01KGQ3Z3Y8R5F6G7H8J9K0M1N2\u0000",
    ]) {
      expect(ver.safeParse(bad).success, bad).toBe(false);
    }
    expect(idOf("session", "authSession").safeParse("auth_01KGQ3Z3Y8R5F6G7H8J9K0M1N2").success).toBe(true);
  });

  it("timestamps are ISO 8601 in the years 1970 to 9999", () => {
    for (const ok of ["1970-01-01T00:00:00Z", "2024-05-01T10:00:00.123+02:00", "9999-12-31T23:59:59Z"])
      expect(timestampParam.safeParse(ok).success, ok).toBe(true);
    for (const bad of ["0000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "1970-01-01T00:30:00+01:00", "yesterday", "2024-13-01T00:00:00Z"]) {
      expect(timestampParam.safeParse(bad).success, bad).toBe(false);
    }
  });
});
