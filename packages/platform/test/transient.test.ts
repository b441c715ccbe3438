// Which database errors are a passing outage (503 service_unavailable, Retry-After) and which are bugs (500).
import { describe, expect, it } from "vitest";
import { ERROR_CODES, isTransientDbError, DatabaseUnavailableError, backoffDelay } from "../src/index.ts";

describe("transient database errors", () => {
  it.each([
    ["admin shutdown (a restart)", { code: "57P01" }],
    ["cannot connect now (starting up)", { code: "57P03" }],
    ["connection exception", { code: "08006" }],
    ["too many connections", { code: "53300" }],
    ["serialization failure", { code: "40001" }],
    ["deadlock", { code: "40P01" }],
    ["connection refused", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    ["connection lost mid-query", new Error("Connection terminated unexpectedly")],
    ["connect timeout", new Error("timeout exceeded when trying to connect")],
    ["a query left unanswered (DATABASE_QUERY_TIMEOUT_MS)", new Error("Query read timeout")],
    ["refused on every address", new AggregateError([{ code: "ECONNREFUSED" }, { code: "ECONNREFUSED" }])],
  ])("%s is transient", (_name, e) => {
    expect(isTransientDbError(e)).toBe(true);
  });

  it.each([
    ["unique violation", { code: "23505" }],
    ["syntax error", { code: "42601" }],
    ["undefined table", { code: "42P01" }],
    ["a plain bug", new TypeError("x is undefined")],
    ["nothing", undefined],
  ])("%s is not", (_name, e) => {
    expect(isTransientDbError(e)).toBe(false);
  });

  it("answers 503 service_unavailable with a retry_after and the cause's code only", () => {
    const e = new DatabaseUnavailableError({ code: "57P01", message: "terminating connection due to administrator command" });
    expect(ERROR_CODES[e.code].http).toBe(503);
    expect(e.extra).toEqual({ retry_after: 1 });
    expect(e.reason).toBe("57P01");
    expect(e.message).not.toContain("administrator");
  });

  it("backs off exponentially with jitter, capped", () => {
    expect(backoffDelay(0, { initialMs: 100, maxMs: 1000 }, () => 1)).toBe(100);
    expect(backoffDelay(3, { initialMs: 100, maxMs: 1000 }, () => 1)).toBe(800);
    expect(backoffDelay(10, { initialMs: 100, maxMs: 1000 }, () => 1)).toBe(1000);
    expect(backoffDelay(10, { initialMs: 100, maxMs: 1000 }, () => 0)).toBe(500);
  });
});
