// Project templates at the verification service, on a real database and a real proof service:
// the code mail is the project's rendered template (escaped HTML), a resend uses it again, an
// inbound code's answer carries the project's reply, and nothing of it (code, address, number,
// template values) reaches the logs, even at debug level.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, ManualClock, parseConfig, type Database, type Scope } from "@icv/platform";
import { startTestProofService, type TestProofService } from "../../proof/test/support/proof-service.ts";
import { ProjectStore } from "../src/store/projects.ts";
import { VerificationStore } from "../src/store/verifications.ts";
import type { UseCaseDeps } from "../src/verifications/deps.ts";
import { openVerificationDatabase, testUseCaseDeps } from "./support/use-cases.ts";
import { createVerification } from "../src/verifications/create.ts";
import { completeInbound } from "../src/verifications/inbound.ts";
import { resendCode } from "../src/verifications/resend.ts";
import { Projects } from "../src/projects/projects.ts";
import { CHANNEL_CONFIG } from "../src/channels/registry.ts";
import type { Mail } from "../src/sending/mailer.ts";

const clock = new ManualClock(Date.now());
const live: Scope = { tenantId: "ten_projects", env: "live" };
const logs: string[] = [];
const mails: Mail[] = [];
let proof: TestProofService;
let closeDb: (() => Promise<void>) | undefined;
let db: Database;
let v: UseCaseDeps;
let projects: Projects;

beforeAll(async () => {
  proof = await startTestProofService();
  ({ db, close: closeDb } = await openVerificationDatabase(4));
  const store = new ProjectStore(db);
  projects = new Projects({ store, clock });
  v = testUseCaseDeps({
    store: new VerificationStore(db),
    proofs: proof.client,
    config: parseConfig(
      {
        SMTP_URL: "smtp://127.0.0.1:1",
        WHATSAPP_PHONE_NUMBER: "+15550001234",
        WHATSAPP_PHONE_NUMBER_ID: "1098765432",
        WHATSAPP_ACCESS_TOKEN: "EAAG-test-access-token",
        WHATSAPP_APP_SECRET: "whatsapp-app-secret-1",
      },
      CHANNEL_CONFIG,
    ),
    clock,
    logger: createLogger({ level: "debug", destination: { write: (s: string) => void logs.push(s) } }),
    mailer: { send: async (m) => void mails.push(m) },
    projects: store,
  });
});
afterAll(async () => {
  await closeDb?.();
  await proof?.close();
});

describe("project templates in the verification service", () => {
  it("mails the project's template on create and resend; the logs hold neither the code nor the address", async () => {
    const p = await projects.create(live, { name: "Acme", business_name: "Acme & Co", support_email: "help@acme.example" });
    await projects.putTemplate(live, p.id, "email", "verification_request", {
      subject: "{{business_name}}: {{code}}",
      body: "<p>{{user_identifier}}</p> code {{code}}, {{expires_in}}. {{support_email}}",
    });
    const a = await createVerification(v, live, { type: "email", channel: "email", identifier: "secret.person@example.com", projectId: p.id });
    expect(a.code).toBeUndefined();
    const first = mails.at(-1)!;
    const code = /^Acme & Co: ([A-Z0-9]{6})$/.exec(first.subject)?.[1];
    expect(code).toBeDefined();
    expect(first.fromName).toBe("Acme & Co");
    expect(first.text).toBe(`<p>s***n@example.com</p> code ${code}, 30 minutes. help@acme.example`);
    expect(first.html).toContain(`&#60;p&#62;s***n@example.com&#60;/p&#62; code ${code}, 30 minutes. help@acme.example`);
    expect(first.html).toContain("Acme &#38; Co");

    clock.advance(61_000);
    await resendCode(v, live, a.row.id);
    const second = mails.at(-1)!;
    const code2 = /^Acme & Co: ([A-Z0-9]{6})$/.exec(second.subject)?.[1];
    expect(code2).toBeDefined();
    expect(code2).not.toBe(code);

    const all = logs.join("");
    expect(all).toContain("verification created");
    for (const secret of [code!, code2!, "secret.person@example.com", "help@acme.example"]) expect(all).not.toContain(secret);
  });

  it("an unknown or another scope's project_id is refused before anything is sent", async () => {
    const other = await projects.create({ tenantId: "ten_other", env: "live" }, { name: "Other" });
    const sent = mails.length;
    for (const projectId of [other.id, "prj_01HZZZZZZZZZZZZZZZZZZZZZZZ", "nope"]) {
      await expect(createVerification(v, live, { type: "email", channel: "email", identifier: "x@example.com", projectId })).rejects.toMatchObject({
        code: "validation_error",
      });
    }
    expect(mails.length).toBe(sent);
  });

  it("an inbound code's answer carries the project's reply; the default project without a template gives none", async () => {
    const p = await projects.create(live, { name: "Replies", business_name: "Bot Co" });
    await projects.putTemplate(live, p.id, "whatsapp", "verification_success", {
      body: "{{business_name}}: {{user_identifier}} verified on {{channel}}",
    });
    const a = await createVerification(v, live, { type: "phone", channel: "whatsapp", identifier: "+37069100555", projectId: p.id });
    const r = await completeInbound(v, "whatsapp", a.code!, "+37069100555");
    expect(r).toMatchObject({ outcome: "verified", reply: "Bot Co: +3706***0555 verified on whatsapp" });
    const d = await createVerification(v, live, { type: "phone", channel: "whatsapp", identifier: "+37069100556" });
    expect((await completeInbound(v, "whatsapp", d.code!, "+37069100556")).reply).toBeUndefined();
    expect(logs.join("")).not.toContain("+37069100555");
  });
});
