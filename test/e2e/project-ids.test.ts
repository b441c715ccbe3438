// The project_id a tenant gives at create, as every answer shows it: verifications (create, GET,
// list, test-verify), verification requests and the verifications they make, phone-first and auth
// sessions and the verification a verified session makes. Without one the member is left out (the default project).
import { describe, expect, it } from "vitest";
import { api } from "../support/stack.ts";
import { useStack, useTenant } from "../support/use-stack.ts";

const stack = useStack();
const t = useTenant(stack, "Project ids");
const as = () => api(stack.url, t.testKey);

async function newProject(name: string): Promise<string> {
  const r = await as().post("/api/v1/me/projects", { name });
  expect(r.status, r.text).toBe(201);
  return r.body.id;
}

const getVerification = async (id: string) => {
  const r = await as().get(`/api/v1/verifications/${id}`);
  expect(r.status, r.text).toBe(200);
  return r.body;
};

describe("project_id in the answers", () => {
  it("a verification shows its project at create, GET, list and test-verify; without one, left out", async () => {
    const prj = await newProject("Checkout");
    const v = await as().post("/api/v1/verifications", {
      type: "email",
      channel: "email",
      identifier: "prj.user@example.com",
      project_id: prj,
    });
    expect(v.status, v.text).toBe(201);
    expect(v.body.project_id).toBe(prj);
    expect((await getVerification(v.body.id)).project_id).toBe(prj);
    const list = await as().get("/api/v1/verifications?limit=100");
    expect(list.body.data.find((x: { id: string }) => x.id === v.body.id).project_id).toBe(prj);
    const done = await as().post(`/api/v1/verifications/${v.body.id}/test-verify`);
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ status: "verified", project_id: prj });

    const plain = await as().post("/api/v1/verifications", { type: "email", channel: "email", identifier: "plain.user@example.com" });
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body).not.toHaveProperty("project_id");
    expect(await getVerification(plain.body.id)).not.toHaveProperty("project_id");
    const listed = (await as().get("/api/v1/verifications?limit=100")).body.data.find((x: { id: string }) => x.id === plain.body.id);
    expect(listed).toBeDefined();
    expect(listed).not.toHaveProperty("project_id");
  });

  it("a request and the verification it makes show the request's project; without one, left out", async () => {
    const prj = await newProject("Requests");
    const r = await as().post("/api/v1/verification-requests", {
      project_id: prj,
      assets: [{ type: "email", identifier: "req.user@example.com", channel: "email" }],
    });
    expect(r.status, r.text).toBe(201);
    expect(r.body.project_id).toBe(prj);
    expect((await as().get(`/api/v1/verification-requests/${r.body.id}`)).body.project_id).toBe(prj);
    expect((await getVerification(r.body.assets[0].verification_id)).project_id).toBe(prj);

    const plain = await as().post("/api/v1/verification-requests", {
      assets: [{ type: "email", identifier: "req.plain@example.com", channel: "email" }],
    });
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body).not.toHaveProperty("project_id");
    expect((await as().get(`/api/v1/verification-requests/${plain.body.id}`)).body).not.toHaveProperty("project_id");
    expect(await getVerification(plain.body.assets[0].verification_id)).not.toHaveProperty("project_id");
  });

  for (const [kind, base, body] of [
    ["a phone-first", "/api/v1/sessions", { channel: "telegram" }],
    ["an auth", "/api/v1/auth/sessions", { channel: "whatsapp", phone_number: "+37069199199", type: "login" }],
  ] as const) {
    it(`${kind} session shows its project, and the verification its test-verify makes carries it; without one, left out`, async () => {
      const prj = await newProject(`Sessions: ${kind}`);
      const s = await as().post(base, { ...body, project_id: prj });
      expect(s.status, s.text).toBe(201);
      expect(s.body.project_id).toBe(prj);
      expect((await as().get(`${base}/${s.body.id}`)).body.project_id).toBe(prj);
      const done = await as().post(`${base}/${s.body.id}/test-verify`);
      expect(done.status, done.text).toBe(200);
      expect(done.body).toMatchObject({ status: "verified", project_id: prj });
      const v = await getVerification(done.body.verification_id);
      expect(v).toMatchObject({ type: "phone", status: "verified", identifier: done.body.phone_number, project_id: prj });

      const plain = await as().post(base, body);
      expect(plain.status, plain.text).toBe(201);
      expect(plain.body).not.toHaveProperty("project_id");
      const plainDone = await as().post(`${base}/${plain.body.id}/test-verify`);
      expect(plainDone.body.status).toBe("verified");
      expect(plainDone.body).not.toHaveProperty("project_id");
      expect(await getVerification(plainDone.body.verification_id)).not.toHaveProperty("project_id");
    });
  }
});
