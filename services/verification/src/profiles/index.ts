/**
 * Profiles: a tenant's public pages of verified assets. Only verified verifications of the
 * profile's own tenant and environment may be listed; the public view re-checks every listed
 * proof with the proof service (which owns revocation) in one call, so a revoked or expired proof
 * never shows as valid.
 */
import type { Client } from "@connectrpc/connect";
import type { ProofService } from "@icv/contracts/gen/icv/proof/v1/proof_service_pb.ts";
import type { LogService } from "@icv/contracts/gen/icv/log/v1/log_service_pb.ts";
import { Environment } from "@icv/contracts/gen/icv/common/v1/scope_pb.ts";
import { AppError, isId, newId, toDate, type Clock, type Scope } from "@icv/platform";
import { channelFor } from "../channels/registry.ts";
import type { ListedVerification, ProfileFields, ProfileProofItem, ProfileRow, ProfileStore } from "../store/index.ts";
import { rpcScope } from "../verifications/deps.ts";
import { applyChange, type ProfileChange } from "./input.ts";

export type { ProfileChange } from "./input.ts";

export interface ProfileDeps {
  store: ProfileStore;
  proofs: Pick<Client<typeof ProofService>, "getProofStatuses">;
  /** Where the listed proofs are in the transparency log (a log that is away shows none as logged). */
  log?: Pick<Client<typeof LogService>, "getProofPositions">;
  clock: Clock;
}

export type PublicStatus = "valid" | "revoked" | "expired" | "suspended" | "invalid";

export interface PublicProof {
  label: string;
  type: string;
  channel: string;
  identifier?: string;
  verifiedAt: Date | null;
  status: PublicStatus;
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** Its issuance entry in the transparency log, once logged. */
  logIndex?: number;
}

export interface PublicView {
  profile: ProfileRow;
  proofs: PublicProof[];
  checkedAt: Date;
}

interface ProofState {
  isRevoked: boolean;
  isExpired: boolean;
  isSuspended?: boolean;
  revokedAt: Date | null;
  expiresAt: Date | null;
}

const notFound = (): never => {
  throw new AppError("not_found", "profile not found");
};

/** A listed proof's state now: the proof service's word first; our row only ever makes it worse. */
export function publicStatus(v: ListedVerification, proof: ProofState | undefined, now: Date): PublicStatus {
  if (v.status === "revoked" || proof?.isRevoked) return "revoked";
  if (!proof || (v.status !== "verified" && v.status !== "suspended")) return "invalid";
  if (proof.isExpired || (proof.expiresAt && proof.expiresAt <= now)) return "expired";
  if (v.status === "suspended" || proof.isSuspended) return "suspended";
  return "valid";
}

/** The identifier as the item's mask_level shows it. */
export function shownIdentifier(v: ListedVerification, item: ProfileProofItem): string | undefined {
  if (item.mask_level === "hidden") return undefined;
  return item.mask_level === "full" ? v.identifier : channelFor(v.type, v.channel).mask(v.identifier);
}

export const byDisplayOrder = (a: ProfileProofItem, b: ProfileProofItem) => a.display_order - b.display_order;

export class Profiles {
  constructor(private readonly d: ProfileDeps) {}

  async create(scope: Scope, change: ProfileChange): Promise<ProfileRow> {
    const fields = applyChange(undefined, change);
    await this.requireVerified(scope, fields);
    return this.d.store.insert(scope, newId("profile", this.d.clock.now().getTime()), fields, this.d.clock.now());
  }

  async get(scope: Scope, id: string): Promise<ProfileRow> {
    return (isId("profile", id) && (await this.d.store.get(scope, id))) || notFound();
  }

  list(scope: Scope, limit: number, offset: number) {
    return this.d.store.list(scope, limit, offset);
  }

  async update(scope: Scope, id: string, change: ProfileChange): Promise<ProfileRow> {
    const current = await this.get(scope, id);
    const fields = applyChange(current, change);
    if (change.setProofs) await this.requireVerified(scope, fields);
    return (await this.d.store.update(scope, id, fields, this.d.clock.now())) ?? notFound();
  }

  async delete(scope: Scope, id: string): Promise<void> {
    if (!isId("profile", id) || !(await this.d.store.delete(scope, id))) notFound();
  }

  /** The public page's view: NOT_FOUND unless the profile exists and is public. */
  async publicView(id: string): Promise<PublicView> {
    const profile = (isId("profile", id) && (await this.d.store.getPublic(id))) || notFound();
    const scope: Scope = { tenantId: profile.tenant_id, env: profile.environment };
    const ids = profile.proofs.map((p) => p.verification_id);
    const [rows, statuses, logged] = await Promise.all([
      this.d.store.verifications(scope, ids),
      ids.length ? this.d.proofs.getProofStatuses({ scope: rpcScope(scope), proofIds: ids }) : { statuses: [] },
      ids.length && this.d.log
        ? this.d.log
            .getProofPositions({ environment: scope.env === "test" ? Environment.TEST : Environment.LIVE, proofIds: ids })
            .catch(() => ({ positions: [] }))
        : { positions: [] },
    ]);
    const logIndex = new Map(logged.positions.map((p) => [p.proofId, Number(p.leafIndex)]));
    const now = this.d.clock.now();
    const byId = new Map(rows.map((r) => [r.id, r]));
    const proofOf = new Map(
      statuses.statuses.map((s) => [
        s.proofId,
        {
          isRevoked: s.isRevoked,
          isExpired: s.isExpired,
          isSuspended: s.isSuspended,
          revokedAt: toDate(s.revokedAt) ?? null,
          expiresAt: toDate(s.expiresAt) ?? null,
        },
      ]),
    );
    const proofs = [...profile.proofs].sort(byDisplayOrder).flatMap((item): PublicProof[] => {
      const v = byId.get(item.verification_id);
      if (!v) return [];
      const p = proofOf.get(v.id);
      return [
        {
          label: item.label,
          type: v.type,
          channel: v.channel,
          identifier: shownIdentifier(v, item),
          verifiedAt: v.verified_at,
          status: publicStatus(v, p, now),
          expiresAt: p?.expiresAt ?? v.proof_expires_at,
          revokedAt: p?.revokedAt ?? v.revoked_at,
          logIndex: logIndex.get(v.id),
        },
      ];
    });
    return { profile, proofs, checkedAt: now };
  }

  /** Every listed verification is a verified one of this scope (one query); else validation_error naming the item. */
  private async requireVerified(scope: Scope, fields: ProfileFields): Promise<void> {
    const rows = await this.d.store.verifications(
      scope,
      fields.proofs.map((p) => p.verification_id),
    );
    const verified = new Set(rows.filter((r) => r.status === "verified").map((r) => r.id));
    const i = fields.proofs.findIndex((p) => !verified.has(p.verification_id));
    if (i < 0) return;
    const field = `proofs.${i}.verification_id`;
    const message = "must be a verified verification of this tenant and environment";
    throw new AppError("validation_error", `${field}: ${message}`, { details: [{ field, message, code: "not_verified" }] });
  }
}
