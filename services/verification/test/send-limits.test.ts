// Send limits on a clock the test moves by hand: 5 codes per destination per 10 minutes across
// tenants (live) or per tenant (test), an hourly budget per tenant environment, and where SMS
// codes may go (allowed countries; never premium-rate, shared-cost, UAN or non-geographic).
// In process always; against real Redis too when REDIS_URL is set.
import { randomBytes } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError, ManualClock, MemoryRateLimiter, parseConfig, RedisRateLimiter, type RateLimiter, type Scope } from "@icv/platform";
import { assertSmsDestination, SendLimits } from "../src/sending/send-limits.ts";

// a 10-minute boundary plus one minute, so the windows are where the test says they are
const START = Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 60_000;

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e, "expected a refusal").toBeInstanceOf(AppError);
  return e as AppError;
}

function behaviour(makeLimiter: (clock: ManualClock) => RateLimiter) {
  const setup = (budgetPerHour = 1000) => {
    const clock = new ManualClock(START);
    const run = randomBytes(6).toString("hex");
    const limits = new SendLimits({ limiter: makeLimiter(clock), keySecret: `secret-${run}`, budgetPerHour });
    const scope = (tenant: string, env: "live" | "test" = "live"): Scope => ({ tenantId: `ten_${tenant}_${run}`, env });
    return { clock, limits, scope };
  };
  const email = (identifier: string) => ({ channel: "email", identifier });

  it("sends 5 codes to one address in 10 minutes, refuses the 6th with rate_limited and retry_after, and lets it through once that has passed", async () => {
    const { clock, limits, scope } = setup();
    for (let i = 0; i < 5; i++) {
      await limits.reserve(scope("a"), email("victim@example.com"));
      clock.advance(30_000);
    }
    const e = await refusal(limits.reserve(scope("a"), email("victim@example.com")));
    expect(e.code).toBe("rate_limited");
    expect(e.httpStatus).toBe(429);
    expect(e.message).toMatch(/too many codes were sent to this email address/);
    const retry = Number(e.extra?.retry_after);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(20 * 60);
    // a refusal is not counted; another address is not affected
    await limits.reserve(scope("a"), email("someone.else@example.com"));
    clock.advance(retry * 1000);
    await limits.reserve(scope("a"), email("victim@example.com"));
  });

  it("counts one address across tenants for live keys (a victim cannot be pumped through many tenants)", async () => {
    const { limits, scope } = setup();
    for (const t of ["a", "b", "c", "d", "e"]) await limits.reserve(scope(t), email("victim@example.com"));
    expect((await refusal(limits.reserve(scope("f"), email("victim@example.com")))).code).toBe("rate_limited");
  });

  it("counts test sends in the tenant's own test window: they never block live sends or another tenant", async () => {
    const { limits, scope } = setup();
    for (let i = 0; i < 5; i++) await limits.reserve(scope("a", "test"), email("victim@example.com"));
    expect((await refusal(limits.reserve(scope("a", "test"), email("victim@example.com")))).code).toBe("rate_limited");
    await limits.reserve(scope("b", "test"), email("victim@example.com"));
    await limits.reserve(scope("a", "live"), email("victim@example.com"));
  });

  it("counts one mailbox however it is written: sub-addresses (+tag), and Gmail's dots and googlemail.com", async () => {
    const { limits, scope } = setup();
    for (const to of ["jane.doe+1@gmail.com", "janedoe+2@gmail.com", "j.a.n.e.doe@googlemail.com", "janedoe@gmail.com", "jane.doe+shop@gmail.com"]) {
      await limits.reserve(scope("a"), email(to));
    }
    expect((await refusal(limits.reserve(scope("b"), email("jane.d.o.e+x@gmail.com")))).code).toBe("rate_limited");
    // elsewhere dots matter: another mailbox
    for (let i = 0; i < 5; i++) await limits.reserve(scope("a"), email(`jane.doe+${i}@example.com`));
    await limits.reserve(scope("a"), email("janedoe@example.com"));
    expect((await refusal(limits.reserve(scope("a"), email("jane.doe@example.com")))).code).toBe("rate_limited");
  });

  it("counts a phone number across channels (SMS and WhatsApp codes to one number share the window)", async () => {
    const { limits, scope } = setup();
    for (let i = 0; i < 5; i++) await limits.reserve(scope("a"), { channel: i % 2 ? "sms" : "whatsapp", identifier: "+37069199199" });
    const e = await refusal(limits.reserve(scope("a"), { channel: "sms", identifier: "+37069199199" }));
    expect(e.message).toMatch(/this phone number/);
  });

  it("refuses past the tenant's hourly budget, per environment, and gives the destination's count back", async () => {
    const { clock, limits, scope } = setup(3);
    for (const to of ["a@example.com", "b@example.com", "c@example.com"]) await limits.reserve(scope("a"), email(to));
    const e = await refusal(limits.reserve(scope("a"), email("d@example.com")));
    expect(e.code).toBe("rate_limited");
    expect(e.message).toMatch(/budget of 3 codes sent per hour/);
    const retry = Number(e.extra?.retry_after);
    expect(retry).toBeGreaterThan(0);
    expect(retry).toBeLessThanOrEqual(2 * 3600);
    // the test environment and other tenants have their own budgets
    await limits.reserve(scope("a", "test"), email("d@example.com"));
    await limits.reserve(scope("b"), email("d@example.com"));
    // the refused send did not count against d@ (b's send above was its 1st): 4 more fit
    for (let i = 0; i < 4; i++) await limits.reserve(scope(`c${i}`), email("d@example.com"));
    expect((await refusal(limits.reserve(scope("z"), email("d@example.com")))).message).toMatch(/this email address/);
    clock.advance(retry * 1000);
    await limits.reserve(scope("a"), email("e@example.com"));
  });
}

describe("SendLimits, in process (injected clock)", () => {
  behaviour((clock) => new MemoryRateLimiter(() => clock.now().getTime()));
});

describe.runIf(process.env.REDIS_URL)("SendLimits against real Redis (REDIS_URL)", () => {
  let redis: RedisClientType;
  beforeAll(async () => {
    redis = createClient({ url: process.env.REDIS_URL });
    await redis.connect();
  });
  afterAll(async () => {
    await redis?.quit();
  });
  // keys hold a per-run secret's HMAC and per-run tenant ids, and expire on their own
  behaviour((clock) => new RedisRateLimiter(redis, () => clock.now().getTime()));
});

describe("assertSmsDestination", () => {
  const all = parseConfig({});
  const refused = (e164: string, config = all) => {
    try {
      assertSmsDestination(e164, config);
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      expect((e as AppError).code).toBe("invalid_identifier");
      return (e as AppError).message;
    }
    return undefined;
  };

  it("lets mobile, fixed-line and VoIP-range numbers of any country through by default", () => {
    for (const n of ["+37069199199", "+447400123456", "+4915112345678", "+14155552671"]) expect(refused(n), n).toBeUndefined();
  });

  it("refuses premium-rate numbers (a UK 09xx number, a Lithuanian 90x number)", () => {
    expect(refused("+449098790000")).toMatch(/premium-rate/);
    expect(refused("+37090012345")).toMatch(/premium-rate/);
  });

  it("refuses shared-cost numbers (libphonenumber's French 0810 and Austrian 0810 examples)", () => {
    expect(refused("+33810123456")).toMatch(/shared-cost/);
    expect(refused("+43810123456")).toMatch(/shared-cost/);
  });

  it("refuses UK universal access (03xx/055x) and non-geographic numbers", () => {
    expect(refused("+443001234567")).toMatch(/universal access/);
    expect(refused("+80012345678")).toMatch(/belong to no country/);
  });

  it("with SMS_ALLOWED_COUNTRIES, only those countries", () => {
    const baltic = parseConfig({ SMS_ALLOWED_COUNTRIES: "lt, LV,EE" });
    expect(baltic.SMS_ALLOWED_COUNTRIES).toEqual(["LT", "LV", "EE"]);
    expect(refused("+37069199199", baltic)).toBeUndefined();
    expect(refused("+447400123456", baltic)).toMatch(/SMS to GB numbers is not enabled/);
    expect(refused("+14155552671", baltic)).toMatch(/US numbers/);
  });

  it("a malformed SMS_ALLOWED_COUNTRIES is a configuration error naming the variable", () => {
    expect(() => parseConfig({ SMS_ALLOWED_COUNTRIES: "Lithuania" })).toThrow(/SMS_ALLOWED_COUNTRIES/);
    expect(() => parseConfig({ SMS_ALLOWED_COUNTRIES: "LT,XX" })).toThrow(/SMS_ALLOWED_COUNTRIES/);
    expect(() => parseConfig({ SEND_BUDGET_PER_HOUR: "0" })).toThrow(/SEND_BUDGET_PER_HOUR/);
  });
});
