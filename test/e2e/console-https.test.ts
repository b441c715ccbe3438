// Behind https (PUBLIC_BASE_URL https://…) the console's session cookie is also Secure, and the
// passkey is bound to that host: one registered for another origin is refused.
import { describe, expect, it } from "vitest";
import { SoftAuthenticator } from "../support/authenticator.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const stack = useStack({ PUBLIC_BASE_URL: "https://console.acme.example" });
const acme = useTenant(stack, "Acme");

const post = (path: string, body: unknown) =>
  fetch(stack.url + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

describe("the console behind https", { timeout: 60_000 }, () => {
  it("sets a Secure HttpOnly SameSite=Strict cookie, for a passkey of the public host only", async () => {
    const inv = await stack.admin.inviteConsoleUser({ tenantId: acme.tenantId, email: "ada@acme.example", role: "admin" }, { headers: stack.adminHeaders });
    expect(inv.inviteUrl).toMatch(/^https:\/\/console\.acme\.example\/console\/invite#/);
    const token = new URL(inv.inviteUrl).hash.slice(1);

    const elsewhere = new SoftAuthenticator("localhost", "http://localhost:3000");
    const o1 = await (await post("/console/api/invite/options", { token })).json();
    expect(o1.options.rp.id).toBe("console.acme.example");
    expect((await post("/console/api/invite/accept", { token, response: elsewhere.register(o1.options) })).status).toBe(400);

    const here = new SoftAuthenticator("console.acme.example", "https://console.acme.example");
    const o2 = await (await post("/console/api/invite/options", { token })).json();
    const r = await post("/console/api/invite/accept", { token, response: here.register(o2.options) });
    expect(r.status).toBe(200);
    expect(r.headers.getSetCookie()[0]).toMatch(/^icv_console=[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Strict; Secure$/);
  });
});
