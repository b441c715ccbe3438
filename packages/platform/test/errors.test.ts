import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { AppError, ERROR_CODES, fromConnectError, toConnectError, type ErrorCode } from "../src/errors.ts";

// interface-spec.md "Errors" table, then DECISIONS.md "Extra error codes" table
const SPEC_HTTP: Record<string, number> = {
  validation_error: 400,
  invalid_identifier: 400,
  invalid_channel_for_type: 400,
  unauthorized: 401,
  not_found: 404,
  challenge_expired: 400,
  rate_limited: 429,
};
const DECISIONS_HTTP: Record<string, number> = {
  test_mode_required: 403,
  forbidden: 403,
  invalid_code: 400,
  max_attempts_exceeded: 400,
  invalid_state: 409,
  channel_unavailable: 400,
  resend_not_supported: 400,
  resend_too_soon: 429,
  invalid_signature: 400,
  too_many_connections: 429,
  payload_too_large: 413,
  unsupported_media_type: 415,
  idempotency_conflict: 422,
  internal_error: 500,
  service_unavailable: 503,
};
// issue 28: a request (headers or body) that stops arriving
const HOSTILE_HTTP: Record<string, number> = { request_timeout: 408 };
// README "Smart reuse" (the spec names the family, not the statuses)
const REUSE_HTTP: Record<string, number> = {
  no_existing_proof: 404,
  proof_too_old: 422,
  already_verified: 409,
  request_expired: 410,
};

const headerPairs = (h: Headers): [string, string][] => {
  const out: [string, string][] = [];
  h.forEach((v, k) => {
    out.push([k, v]);
  });
  return out;
};

describe("ERROR_CODES", () => {
  it("holds exactly the codes of the spec and DECISIONS.md tables, each with its HTTP status", () => {
    const expected = { ...SPEC_HTTP, ...DECISIONS_HTTP, ...REUSE_HTTP, ...HOSTILE_HTTP };
    const actual = Object.fromEntries(Object.entries(ERROR_CODES).map(([code, v]) => [code, v.http]));
    expect(actual).toEqual(expected);
  });

  it.each(Object.keys(ERROR_CODES) as ErrorCode[])("AppError(%s).httpStatus is its table status", (code) => {
    expect(new AppError(code, "m").httpStatus).toBe({ ...SPEC_HTTP, ...DECISIONS_HTTP, ...REUSE_HTTP, ...HOSTILE_HTTP }[code]);
  });
});

describe("toConnectError ⇄ fromConnectError", () => {
  it("keeps code, message, details and extra", () => {
    const err = new AppError("invalid_code", "the code is not correct", {
      details: [{ field: "challenge_code", message: "does not match", code: "mismatch" }],
      extra: { attempts_remaining: 3, hint: "x", final: false },
    });
    const ce = toConnectError(err);
    expect(ce).toBeInstanceOf(ConnectError);
    expect(ce.code).toBe(Code.InvalidArgument);
    expect(ce.rawMessage).toBe("the code is not correct");
    const back = fromConnectError(ce);
    expect(back).toBeInstanceOf(AppError);
    expect(back.code).toBe("invalid_code");
    expect(back.message).toBe("the code is not correct");
    expect(back.details).toEqual([{ field: "challenge_code", message: "does not match", code: "mismatch" }]);
    expect(back.extra).toEqual({ attempts_remaining: 3, hint: "x", final: false });
  });

  it.each(Object.keys(ERROR_CODES) as ErrorCode[])("%s survives the round trip with its own Connect code", (code) => {
    const ce = toConnectError(new AppError(code, `message of ${code}`));
    expect(ce.code).toBe(ERROR_CODES[code].connect);
    const back = fromConnectError(ce);
    expect(back.code).toBe(code);
    if (code !== "internal_error") expect(back.message).toBe(`message of ${code}`);
    expect(back.details).toBeUndefined();
    expect(back.extra).toBeUndefined();
  });

  it("survives the trip when the error metadata travels as plain header strings (a new ConnectError from the wire)", () => {
    const ce = toConnectError(new AppError("max_attempts_exceeded", "too many", { extra: { attempts_remaining: 0 } }));
    // what a client reconstructs: a fresh error from code, message and the received metadata
    const received = new ConnectError(ce.rawMessage, ce.code, new Headers(headerPairs(ce.metadata)));
    const back = fromConnectError(received);
    expect([back.code, back.message, back.extra]).toEqual(["max_attempts_exceeded", "too many", { attempts_remaining: 0 }]);
  });

  it("turns an unknown error into internal_error with no internal message", () => {
    const secret = "connection to postgres://admin:hunter2@db failed";
    const ce = toConnectError(new Error(secret));
    expect(ce.code).toBe(Code.Internal);
    expect(ce.message).not.toContain("hunter2");
    expect(JSON.stringify(headerPairs(ce.metadata))).not.toContain("hunter2");
    const back = fromConnectError(ce);
    expect(back.code).toBe("internal_error");
    expect(back.message).toBe("internal error");
    expect(back.httpStatus).toBe(500);
  });

  it("reads a plain thrown value as internal_error without its text", () => {
    for (const thrown of [new TypeError("x is undefined at /srv/app.ts:12"), "a string", 42, undefined]) {
      const back = fromConnectError(thrown);
      expect(back.code).toBe("internal_error");
      expect(back.message).toBe("internal error");
    }
  });

  it("maps a Connect error without the spec header by its Connect code", () => {
    expect(fromConnectError(new ConnectError("no such thing", Code.NotFound))).toMatchObject({
      code: "not_found",
      message: "no such thing",
    });
    expect(fromConnectError(new ConnectError("bad", Code.InvalidArgument)).code).toBe("validation_error");
    expect(fromConnectError(new ConnectError("who", Code.Unauthenticated)).code).toBe("unauthorized");
    const down = fromConnectError(new ConnectError("connect ECONNREFUSED 127.0.0.1:50052", Code.Unavailable));
    expect(down.code).toBe("service_unavailable");
    expect(down.message).not.toContain("ECONNREFUSED");
    expect(fromConnectError(new ConnectError("deadline", Code.DeadlineExceeded)).code).toBe("service_unavailable");
    expect(fromConnectError(new ConnectError("panic at 0x1", Code.Unknown))).toMatchObject({
      code: "internal_error",
      message: "internal error",
    });
  });

  it("ignores a spec header naming a code that does not exist", () => {
    const ce = new ConnectError("weird", Code.NotFound, new Headers({ "icv-error-code": "no_such_code" }));
    expect(fromConnectError(ce).code).toBe("not_found");
  });

  it("keeps the error when its extras header is not JSON", () => {
    const ce = new ConnectError("gone", Code.FailedPrecondition, new Headers({ "icv-error-code": "invalid_state", "icv-error-extra": "{not json" }));
    const back = fromConnectError(ce);
    expect([back.code, back.message, back.extra]).toEqual(["invalid_state", "gone", undefined]);
  });

  it("passes an AppError through unchanged", () => {
    const e = new AppError("not_found", "x");
    expect(fromConnectError(e)).toBe(e);
  });

  it("an error whose details hold a character above U+00FF still converts", () => {
    const err = new AppError("validation_error", "invalid body", {
      details: [{ field: "body.name", message: "must be ≤ 255 characters", code: "too_big" }],
    });
    const back = fromConnectError(toConnectError(err));
    expect(back.details?.[0].message).toBe("must be ≤ 255 characters");
  });
});
