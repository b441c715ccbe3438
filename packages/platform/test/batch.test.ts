// batched(): the group commit every batched store write goes through. What a caller sees: its own
// answer whether its row went alone or with others; a failure whose outcome is unknown (no answer
// from the database) fails the calls of that batch and is never retried; at most `max` rows and two
// statements at once on Postgres; calls made later than a turn of the event loop are not held back.
import { describe, expect, it } from "vitest";
import { batched } from "../src/batch.ts";
import { DatabaseError } from "../src/database.ts";

/** A write whose statements the test finishes by hand; records each statement's rows. */
function writer() {
  const statements: { rows: string[]; oneRow: boolean; finish: (err?: unknown) => void }[] = [];
  const statement = (rows: string[], oneRow: boolean) =>
    new Promise<string[]>((resolve, reject) => {
      statements.push({ rows, oneRow, finish: (err) => (err ? reject(err) : resolve(rows.map((r) => `stored ${r}`))) });
    });
  const write = batched<string, string>(
    { kind: "pg" },
    { one: async (r) => (await statement([r], true))[0], many: (rs) => statement(rs, false), key: (r) => r.split("#")[0], max: 3 },
  );
  return { write, statements };
}
const turn = () => new Promise((r) => setImmediate(r));

describe("batched writes", () => {
  it("write the calls of one turn together, at most `max` rows and two statements at once, each answered its own", async () => {
    const { write, statements } = writer();
    const answers = Promise.all(["a", "b", "c", "d", "e", "f", "g"].map(write));
    await turn();
    expect(statements.map((s) => s.rows)).toEqual([
      ["a", "b", "c"],
      ["d", "e", "f"],
    ]);
    statements[0].finish();
    await turn();
    expect(statements[2].rows).toEqual(["g"]);
    statements[1].finish();
    statements[2].finish();
    expect(await answers).toEqual(["a", "b", "c", "d", "e", "f", "g"].map((r) => `stored ${r}`));
  });

  it("never put two calls with one key into one statement", async () => {
    const { write, statements } = writer();
    const answers = Promise.all(["x#1", "x#2", "y"].map(write));
    await turn();
    expect(statements.map((s) => s.rows)).toEqual([["x#1", "y"], ["x#2"]]);
    for (const s of statements) s.finish();
    expect(await answers).toEqual(["stored x#1", "stored x#2", "stored y"]);
  });

  it("fail every call of a batch whose outcome is unknown, without writing them again", async () => {
    const { write, statements } = writer();
    const answers = Promise.allSettled(["a", "b"].map(write));
    await turn();
    statements[0].finish(new Error("Connection terminated unexpectedly"));
    expect((await answers).map((s) => s.status)).toEqual(["rejected", "rejected"]);
    expect(statements).toHaveLength(1);
  });

  it("write each call of a batch the database refused again alone, so each gets its own outcome", async () => {
    const { write, statements } = writer();
    const answers = Promise.allSettled(["a", "bad", "c"].map(write));
    await turn();
    statements[0].finish(new DatabaseError("23505", "pkey", "icv_test"));
    await turn();
    expect(statements.slice(1).map((s) => [s.rows, s.oneRow])).toEqual([
      [["a"], true],
      [["bad"], true],
      [["c"], true],
    ]);
    statements[1].finish();
    statements[2].finish(new DatabaseError("23505", "pkey", "icv_test"));
    statements[3].finish();
    expect((await answers).map((s) => (s.status === "fulfilled" ? s.value : "refused"))).toEqual(["stored a", "refused", "stored c"]);
  });

  it("write a lone call at once through the one-row statement", async () => {
    const { write, statements } = writer();
    const answer = write("solo");
    await turn();
    expect(statements.map((s) => [s.rows, s.oneRow])).toEqual([[["solo"], true]]);
    statements[0].finish();
    expect(await answer).toBe("stored solo");
  });
});
