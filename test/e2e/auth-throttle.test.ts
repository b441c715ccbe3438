import { randomInt } from "node:crypto";
import { describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";
import { expectError } from "../support/expect-error.ts";

const stack = useStack({ AUTH_FAILURES_PER_MINUTE: "3", TRUST_PROXY: "loopback" });
const t = useTenant(stack, "Throttle");

// a client address of its own (TRUST_PROXY=loopback: X-Forwarded-For from a loopback proxy counts), so
// runs sharing one Redis never share this counter
const client = (net: string) => ({ "x-forwarded-for": `${net}.${randomInt(1, 255)}`, authorization: "" });

describe("failed API key attempts are throttled per client address", () => {
  it("answers 401 three times, then 429 with Retry-After; a valid key from that address still works; another address is unaffected", async () => {
    const from = client("203.0.113");
    const bad = { ...from, authorization: "Bearer pk_test_0000000000000000000000000000000000000000000" };
    for (let i = 0; i < 3; i++) expectError(await api(stack.url).get("/api/v1/verifications", bad), 401, "unauthorized");
    const limited = expectError(await api(stack.url).get("/api/v1/verifications", bad), 429, "rate_limited");
    expect(limited.retry_after).toBeGreaterThanOrEqual(1);

    const good = await api(stack.url, t.testKey).get("/api/v1/verifications", { "x-forwarded-for": from["x-forwarded-for"] });
    expect(good.status).toBe(200);

    const elsewhere = { ...client("198.51.100"), authorization: "Bearer nope" };
    expectError(await api(stack.url).get("/api/v1/verifications", elsewhere), 401, "unauthorized");
  });
});
