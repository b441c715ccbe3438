// Delivery bodies at rest (docs/privacy.md): bodies stored before sealing are sealed by the background
// pass, a rotated key re-seals them under the new version, and a start on bodies the configured
// key cannot open is refused naming the version.
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, newId, openDatabase, PersonalData, readMigrations, type Database } from "@icv/platform";
import { maybeFreshPostgres, type FreshPostgres } from "../../../test/support/fresh-postgres.ts";
import { checkWebhookKeys, sealOutdatedBodies, webhookDatabase } from "../src/store/sealing.ts";

const MIGRATIONS = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "migrations");
let pg: FreshPostgres | undefined;
let raw: Database;
const K1 = randomBytes(32);
const K2 = randomBytes(32);
const INDEX = randomBytes(32);
const v1 = new PersonalData(new Map([[1, K1]]), INDEX);
const v2 = new PersonalData(
  new Map([
    [2, K2],
    [1, K1],
  ]),
  INDEX,
);

beforeAll(async () => {
  pg = await maybeFreshPostgres();
  raw = await openDatabase({ url: pg?.url, dataDir: "memory://" });
  await migrate(raw, "webhook", readMigrations(MIGRATIONS));
});
afterAll(async () => {
  await raw?.close();
  await pg?.drop();
});

const stored = async (id: string) =>
  (await raw.query<{ body: string; key_version: number | null }>(`SELECT payload AS body, key_version FROM webhook.deliveries WHERE id = $1`, [id])).rows[0];

describe("delivery bodies at rest", () => {
  it("seals bodies stored in clear, re-seals them under a rotated key, and refuses a key that cannot open them", async () => {
    const ids = Array.from({ length: 3 }, () => newId("webhookDelivery"));
    for (const id of ids)
      await raw.query(
        `INSERT INTO webhook.deliveries (id, tenant_id, environment, event_id, event_type, url, payload, request_headers, max_attempts, next_retry_at, created_at, updated_at)
         VALUES ($1, 'ten_1', 'test', $2, 'verification.completed', 'https://a.example/', $3, '{}', 3, now(), now(), now())`,
        [id, newId("event"), JSON.stringify({ client_metadata: { crm: "kinkajou-77" } })],
      );
    const one = webhookDatabase(raw, v1);
    expect(await sealOutdatedBodies(one, 2)).toBe(2);
    expect(await sealOutdatedBodies(one, 2)).toBe(1);
    expect(await sealOutdatedBodies(one, 2)).toBe(0);
    for (const id of ids) {
      const s = await stored(id);
      expect(s.key_version).toBe(1);
      expect(s.body).toMatch(/^pd1\.1\./);
      expect(s.body).not.toContain("kinkajou");
    }
    // read through the store's database: opened
    const read = await one.query<{ id: string; payload: string }>(`SELECT id, payload FROM webhook.deliveries WHERE id = $1`, [ids[0]]);
    expect(JSON.parse(read.rows[0].payload)).toEqual({ client_metadata: { crm: "kinkajou-77" } });
    await checkWebhookKeys(raw, v1);

    // data-key rotate: version 2 seals, 1 still opens; the pass moves every body to 2
    const two = webhookDatabase(raw, v2);
    expect(await sealOutdatedBodies(two)).toBe(3);
    expect((await stored(ids[2])).body).toMatch(/^pd1\.2\./);
    await checkWebhookKeys(raw, v2);
    await expect(checkWebhookKeys(raw, v1)).rejects.toThrow(/missing key version 2/);
    const wrong = new PersonalData(new Map([[2, randomBytes(32)]]), INDEX);
    await expect(checkWebhookKeys(raw, wrong)).rejects.toThrow(/key version 2 is not the key/);
  });
});
