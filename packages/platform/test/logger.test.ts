import { describe, expect, it } from "vitest";
import { createLogger } from "../src/logger.ts";
import { lineCollector } from "./support/log-lines.ts";

// every field name the logger must censor (logger.ts SECRET_KEYS)
const SECRET_FIELDS = [
  "authorization",
  "api_key",
  "apiKey",
  "key",
  "token",
  "proof_token",
  "bot_token",
  "code",
  "challenge_code",
  "secret",
  "password",
  "identifier",
  "phone_number",
  "signature",
  "private_key",
];

const value = (field: string, where: string) => `SECRET-${where}-${field}-9f3a`;

function logged(fn: (log: ReturnType<typeof createLogger>) => void) {
  const out = lineCollector();
  fn(createLogger({ level: "info", destination: out }));
  return out;
}

describe("logger redaction", () => {
  it("prints [redacted] for every secret field at the top level and never its value", () => {
    const out = logged((log) => log.info(Object.fromEntries(SECRET_FIELDS.map((f) => [f, value(f, "top")])), "top level"));
    expect(out.lines).toHaveLength(1);
    const rec = out.records()[0];
    for (const f of SECRET_FIELDS) expect(rec[f], f).toBe("[redacted]");
    expect(out.lines[0]).not.toContain("SECRET-");
  });

  it("redacts them one level down (req.authorization, body.challenge_code, …)", () => {
    const out = logged((log) =>
      log.info(
        {
          req: Object.fromEntries(SECRET_FIELDS.map((f) => [f, value(f, "req")])),
          body: { challenge_code: value("challenge_code", "body"), identifier: "+37069199199", keep: "visible" },
        },
        "nested",
      ),
    );
    const rec = out.records()[0] as { req: Record<string, string>; body: Record<string, string> };
    for (const f of SECRET_FIELDS) expect(rec.req[f], f).toBe("[redacted]");
    expect(rec.body).toEqual({ challenge_code: "[redacted]", identifier: "[redacted]", keep: "visible" });
    expect(out.lines[0]).not.toContain("SECRET-");
    expect(out.lines[0]).not.toContain("37069199199");
  });

  it("redacts secret keys at any depth, in arrays too, and an error's driver members (params, detail) are never written", () => {
    const dbErr = Object.assign(new Error("insert failed"), {
      params: ["+37069199199", "QX7K2M"],
      detail: "Key (phone)=(+37069199199) already exists.",
    });
    const deep = { phone_number: "+37069199199", deep_link: "https://t.me/x?start=QX7K2M", keep: "visible" };
    const input = { a: { b: { c: deep } }, list: [{ x: { y: { z: { w: { code_hmac: "9d5ed678fe57" } } } } }], err: dbErr };
    const out = logged((log) => log.error(input, "deep"));
    const rec = out.records()[0] as { a: { b: { c: Record<string, string> } }; list: any[]; err: Record<string, unknown> };
    expect(rec.a.b.c).toEqual({ phone_number: "[redacted]", deep_link: "[redacted]", keep: "visible" });
    expect(rec.list[0].x.y.z.w).toEqual({ code_hmac: "[redacted]" });
    expect(input.a.b.c.phone_number).toBe("+37069199199"); // the caller's object is not changed
    expect(out.lines[0]).not.toContain("9d5ed678fe57");
    expect(rec.err).toMatchObject({ type: "Error", message: "insert failed" });
    expect(out.lines[0]).not.toMatch(/37069199199|QX7K2M/);
  });

  it("redacts the bindings of a child logger too", () => {
    const out = logged((log) => log.child({ token: "pk_test_CHILDSECRET", tenant_id: "ten_1" }).info({ secret: "whsec_SECRET" }, "child"));
    const rec = out.records()[0];
    expect(rec).toMatchObject({ token: "[redacted]", secret: "[redacted]", tenant_id: "ten_1", msg: "child" });
    expect(out.lines[0]).not.toMatch(/CHILDSECRET|whsec_SECRET/);
  });

  it("leaves ordinary fields alone and writes one JSON line with level, time and msg", () => {
    const out = logged((log) => log.info({ tenant_id: "ten_1", verification_id: "ver_1", status: 200 }, "hello"));
    const rec = out.records()[0];
    expect(rec).toMatchObject({ level: "info", tenant_id: "ten_1", verification_id: "ver_1", status: 200, msg: "hello" });
    expect(new Date(rec.time as string).toISOString()).toBe(rec.time);
  });

  it("writes nothing below its level, and nothing at all when silent", () => {
    expect(logged((log) => log.debug({ a: 1 }, "hidden")).lines).toEqual([]);
    const out = lineCollector();
    createLogger({ level: "silent", destination: out }).error({ a: 1 }, "hidden");
    expect(out.lines).toEqual([]);
  });
});
