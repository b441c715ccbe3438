import { timingSafeEqual } from "node:crypto";
import { AppError, newId, toDate, ts, type HolderKey, type ProofMethod, type Scope } from "@icv/platform";
import type { Channel } from "../channels/channel.ts";
import { channelFor } from "../channels/registry.ts";
import type { DeliveryDeps } from "../delivery.ts";
import type { ListFilter, ProofFormat as Format, Status, TestMessageRow, VerificationRow } from "../store/index.ts";
import type { JsonObject } from "@bufbuild/protobuf";
import { ProofFormat, type IssueProofResponse } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import {
  identifierHash,
  rpcScope,
  type Answer,
  type CreateInput,
  type Failure,
  type InboundOutcome,
  type SubmitInput,
  type UseCaseHost,
  type VerificationDeps,
} from "./deps.ts";
import { createVerification } from "./create.ts";
import { resendCode } from "./resend.ts";
import { reinstateVerification, suspendVerification } from "./suspension.ts";
import { completeInbound, recordSessionVerification } from "./inbound.ts";
import { checkDomain, createDomainVerification, providerCheck, recheckDue, type DomainAnswer, type DomainCreateInput } from "./domain.ts";

export * from "./deps.ts";

const toProofFormat = (f: Format) => (f === "sd-jwt-vc" ? ProofFormat.SD_JWT_VC : ProofFormat.JWT);

/** A proof as the verification keeps it: the JWT, its expiry, its identifier salt and, when asked for, the SD-JWT VC. */
export interface IssuedProof {
  token: string;
  expiresAt: Date;
  /** The token's verified_at: the one source of the row's (a retry gets the stored proof's). */
  verifiedAt?: Date;
  identifierSalt: string;
  sdJwtVc?: string;
}

const issued = (p: IssueProofResponse): IssuedProof => ({
  token: p.token,
  expiresAt: toDate(p.expiresAt)!,
  verifiedAt: toDate(p.verifiedAt),
  identifierSalt: p.identifierSalt,
  sdJwtVc: p.sdJwtVc,
});

/** The verification use cases: plain functions over the store, the proof client, the clock. */
export class Verifications implements UseCaseHost {
  readonly delivery: DeliveryDeps;

  constructor(readonly d: VerificationDeps) {
    this.delivery = { config: d.config, logger: d.logger, mailer: d.mailer, ...d.senders };
  }

  /** Create (create.ts); channel auto runs its provider chain at once (domain.ts). */
  async create(scope: Scope, input: CreateInput): Promise<Answer> {
    const a = await createVerification(this, scope, input);
    return input.dnsProvider ? providerCheck(this, scope, a, input.dnsProvider) : a;
  }

  /** POST /verifications/domain (domain.ts). */
  createDomain(scope: Scope, input: DomainCreateInput): Promise<DomainAnswer> {
    return createDomainVerification(this, scope, input);
  }

  /** Runs a domain verification's check now (domain.ts): /verify, /verifications/domain/:id/check, the hosted page. */
  checkDomain(scope: Scope, id: string): Promise<DomainAnswer> {
    return checkDomain(this, scope, id);
  }

  /** The scheduled re-checks that are due, claimed by this replica (domain.ts; the sweeper calls it). */
  recheckDue(): Promise<number> {
    return recheckDue(this);
  }

  /** A domain verification's check state (the hosted page's domain assets: one query for all). */
  domainStates(scope: Scope, ids: string[]) {
    return this.d.store.checks.many(scope, ids);
  }

  /** The verification as it stands now; a pending one whose challenge ran out is expired first. */
  async get(scope: Scope, id: string): Promise<VerificationRow> {
    const v = await this.d.store.get(scope, id);
    if (!v) throw new AppError("not_found", "verification not found");
    if (v.status === "pending" && v.challenge_expires_at <= this.d.clock.now()) {
      return (await this.d.store.expireOne(v, this.d.clock.now())) ?? (await this.get(scope, id));
    }
    return v;
  }

  /** A page of the tenant's verifications; due pending ones are expired first, so none shows a stale pending. */
  async list(scope: Scope, f: ListFilter) {
    await this.expireDue(scope);
    return this.d.store.list(scope, f);
  }

  async submit(scope: Scope, id: string, input: SubmitInput): Promise<VerificationRow> {
    const v = await this.pendingForAction(scope, id);
    // the channel checks the evidence (code, signature, bot token) or refuses it (OAuth, DNS/HTTP checks)
    const verdict = await channelFor(v.type, v.channel).complete(v, input, { hmacKey: this.d.hmacKey, config: this.d.config });
    if (!verdict.ok) return this.failAttempt(scope, v, verdict.failure);
    return this.complete(scope, v, verdict.method);
  }

  async testVerify(scope: Scope, id: string): Promise<VerificationRow> {
    if (scope.env !== "test") throw new AppError("test_mode_required", "test-verify needs a test key (pk_test_)");
    const v = await this.get(scope, id);
    if (v.status === "verified") return v; // a retry after a lost answer gets the same proof
    return this.complete(scope, await this.pendingForAction(scope, id, v), "test");
  }

  /** Sends a new code (resend.ts). */
  resend(scope: Scope, id: string): Promise<{ row: VerificationRow; message: string; resendsRemaining: number }> {
    return resendCode(this, scope, id);
  }

  /** Reverse OTP: a code that arrived from a phone (inbound.ts). */
  completeInbound(channel: string, code: string, sender: string, messageKey?: string): Promise<InboundOutcome> {
    return completeInbound(this, channel, code, sender, messageKey);
  }

  /** A phone verification a session proved (inbound.ts). */
  recordSessionVerification(scope: Scope, input: Parameters<typeof recordSessionVerification>[2]): Promise<VerificationRow> {
    return recordSessionVerification(this, scope, input);
  }

  /** Keeps a test session's message for GET /test/messages (test scopes only). */
  async recordTestMessage(
    scope: Scope,
    m: { sessionId: string; channel: string; direction: "inbound" | "outbound"; from?: string; to: string; text: string },
  ): Promise<TestMessageRow> {
    if (scope.env !== "test") throw new AppError("test_mode_required", "test messages are only kept for test keys (pk_test_)");
    const now = this.d.clock.now();
    const row: TestMessageRow = {
      id: newId("testMessage", now.getTime()),
      tenant_id: scope.tenantId,
      environment: "test",
      verification_id: null,
      session_id: m.sessionId,
      channel: m.channel,
      direction: m.direction,
      from_address: m.from ?? null,
      to_address: m.to,
      subject: null,
      body: m.text,
      created_at: now,
    };
    await this.d.store.insertTestMessage(row);
    return row;
  }

  /**
   * Revokes the proof. The proof service owns the revoked state (validation sees it at once) and
   * writes its `proof.revoked` event in the same transaction; this service follows that event
   * (proof-revocations.ts), so a crash right after the proof call still ends with the verification
   * revoked. Marking it here too only makes this answer and an immediate read agree. Idempotent.
   */
  async revoke(scope: Scope, id: string, reason: string): Promise<VerificationRow> {
    const v = await this.get(scope, id);
    if (v.status === "revoked") return v;
    if (v.status !== "verified" && v.status !== "suspended")
      throw new AppError("invalid_state", `only a verified (or suspended) verification can be revoked (this one is ${v.status})`);
    const r = await this.d.proofs.revokeProof({ scope: rpcScope(scope), proofId: id, reason });
    const revokedAt = toDate(r.revokedAt) ?? this.d.clock.now();
    return (await this.d.store.markRevoked(v, revokedAt, r.reason)) ?? (await this.get(scope, id));
  }

  /** Suspends a verified verification's proof (suspension.ts; the domain re-checks of issue 27 call it). */
  suspend(scope: Scope, id: string, reason: string): Promise<VerificationRow> {
    return suspendVerification(this, scope, id, reason);
  }

  /** Ends a suspension: verified again (suspension.ts). */
  reinstate(scope: Scope, id: string): Promise<VerificationRow> {
    return reinstateVerification(this, scope, id);
  }

  /**
   * Proof check for a caller of `scope`'s environment: a test proof is valid only for a test scope
   * (the proof service answers test_proof otherwise). With an identifier, normalized like the
   * asset: a JWT's salted hash is compared, an SD-JWT VC presentation's disclosed identifier
   * (identifier_not_disclosed when it discloses none).
   */
  async validate(scope: Scope, token: string, identifier?: string, binding: { audience?: string; nonce?: string } = {}) {
    const r = await this.d.proofs.validateProof({ proofToken: token, scope: rpcScope(scope), ...binding });
    if (!r.valid || identifier === undefined) return r;
    const canonical = proofCanonical(r.type, r.channel, identifier);
    const refuse = (reason: string, message: string) => ({ valid: false, reason, message }) as typeof r;
    let a: Buffer;
    let b: Buffer;
    if (r.format === ProofFormat.SD_JWT_VC) {
      if (r.disclosedIdentifier === undefined) return refuse("identifier_not_disclosed", "the presentation does not disclose the identifier");
      [a, b] = [Buffer.from(canonical), Buffer.from(r.disclosedIdentifier)];
    } else {
      [a, b] = [Buffer.from(canonical ? identifierHash(r.identifierSalt, canonical) : "", "hex"), Buffer.from(r.identifierHash, "hex")];
    }
    if (!canonical || a.length !== b.length || !timingSafeEqual(a, b)) return refuse("identifier_mismatch", "the identifier does not match the proof");
    return r;
  }

  /** Signs the proof of a verification completed from an earlier proof (reuse.ts): `method: reused_proof`; idempotent by id. */
  async issueReusedProof(
    scope: Scope,
    v: {
      id: string;
      type: string;
      channel: string;
      identifierCanonical: string;
      externalUserId: string;
      ttl: number;
      proofFormat: Format;
      holderKey: HolderKey | null;
    },
    at: Date,
  ): Promise<IssuedProof> {
    return issued(
      await this.d.proofs.issueProof({
        scope: rpcScope(scope),
        proofId: v.id,
        type: v.type,
        channel: v.channel,
        identifier: v.identifierCanonical,
        externalUserId: v.externalUserId,
        verifiedAt: ts(at),
        expiresInSeconds: v.ttl,
        method: "reused_proof",
        format: toProofFormat(v.proofFormat),
        holderKey: (v.holderKey ?? undefined) as JsonObject | undefined,
      }),
    );
  }

  /** Withdraws a proof that was issued for a verification that was then not stored. */
  async withdrawProof(scope: Scope, id: string): Promise<void> {
    await this.d.proofs.revokeProof({ scope: rpcScope(scope), proofId: id, reason: "other" });
  }

  /** Sweeps stale pending verifications (of one scope, or all) to expired; returns how many moved. */
  async expireDue(scope?: Scope): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.d.store.expireDue(this.d.clock.now(), 500, scope);
      total += n;
      if (n < 500) return total;
    }
  }

  /** Loads a verification that must be pending for a user action; expired and other states answer their error. */
  async pendingForAction(scope: Scope, id: string, loaded?: VerificationRow): Promise<VerificationRow> {
    const v = loaded ?? (await this.get(scope, id));
    if (v.status === "expired") throw new AppError("challenge_expired", "the challenge has expired; create a new verification");
    if (v.status !== "pending") throw new AppError("invalid_state", `verification is ${v.status}`);
    return v;
  }

  /** Counts a wrong answer: throws `code` with attempts_remaining, or max_attempts_exceeded when it was the last try. */
  async failAttempt(scope: Scope, v: VerificationRow, [code, message]: Failure): Promise<never> {
    const after = await this.d.store.recordFailedAttempt(scope, v.id, this.d.clock.now());
    if (!after) {
      await this.pendingForAction(scope, v.id); // it moved on meanwhile: answer its new state
      throw new AppError("invalid_state", "verification is no longer pending");
    }
    if (after.status === "failed") {
      throw new AppError("max_attempts_exceeded", "too many wrong attempts; the verification has failed", {
        extra: { attempts_remaining: 0 },
      });
    }
    const remaining = after.max_attempts - after.attempts;
    throw new AppError(code, message, {
      extra: { attempts_remaining: remaining },
    });
  }

  /**
   * pending → verified, shown by `method` (the proof's claim and the row's; an OAuth sign-in adds
   * the account's `subjectHash`). The proof is issued
   * first (idempotent by verification id), then the row moves with its events in one
   * transaction; a crash between the two is healed by a retry, which gets the same proof.
   */
  async complete(scope: Scope, v: VerificationRow, method: ProofMethod, subjectHash?: string): Promise<VerificationRow> {
    const now = this.d.clock.now();
    const proof = await this.d.proofs.issueProof({
      scope: rpcScope(scope),
      proofId: v.id,
      type: v.type,
      channel: v.channel,
      identifier: v.identifier_canonical,
      externalUserId: v.external_user_id ?? undefined,
      verifiedAt: ts(now),
      expiresInSeconds: v.proof_expires_in,
      method,
      subjectHash,
      format: toProofFormat(v.proof_format),
      holderKey: (v.holder_key ?? undefined) as JsonObject | undefined,
    });
    const done = await this.d.store.markVerified(v, { ...issued(proof), method }, now);
    if (done) {
      this.d.logger.info({ request_id: scope.requestId, tenant_id: scope.tenantId, verification_id: v.id, kid: proof.kid }, "verification verified");
      return done;
    }
    const cur = await this.get(scope, v.id);
    if (cur.status === "verified") return cur;
    // it left pending (expired or failed) while the proof was being signed: withdraw that proof
    await this.d.proofs.revokeProof({ scope: rpcScope(scope), proofId: v.id, reason: "other" });
    throw new AppError(cur.status === "expired" ? "challenge_expired" : "invalid_state", `verification is ${cur.status as Status}`);
  }
}

/**
 * The compared form of an identifier given to check a proof: normalized as at creation, else as
 * a provider attests it (a phone a session captured may be one the strict check refuses); ""
 * when neither takes it.
 */
function proofCanonical(type: string, channel: string, raw: string): string {
  let c: Channel;
  try {
    c = channelFor(type, channel);
  } catch {
    return "";
  }
  try {
    return c.normalize(raw).canonical;
  } catch {
    return c.phone?.attestedCanonical(raw) ?? "";
  }
}
