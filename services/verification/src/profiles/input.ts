/**
 * A profile's fields, checked (the gateway checks the HTTP shape too; these rules hold for any
 * caller of the RPC). A bad field is validation_error naming it.
 */
import { AppError, isId } from "@icv/platform";
import type { MaskLevel, ProfileFields, ProfileProofItem } from "../store/profiles.ts";

export const MAX_PROOFS = 50;
export const MAX_DISPLAY_NAME = 100;
export const MAX_BIO = 1_000;
export const MAX_LABEL = 100;
export const MAX_URL = 2_048;
export const MAX_DISPLAY_ORDER = 10_000;
export const MASK_LEVELS: readonly MaskLevel[] = ["full", "partial", "hidden"];

export interface ProfileChange {
  displayName?: string;
  bio?: string;
  avatarUrl?: string;
  isPublic?: boolean;
  setProofs: boolean;
  proofs: { verificationId: string; label: string; maskLevel: string; displayOrder: number }[];
  clearBio: boolean;
  clearAvatarUrl: boolean;
}

const invalid = (field: string, message: string): never => {
  throw new AppError("validation_error", `${field}: ${message}`, { details: [{ field, message, code: "invalid" }] });
};

const text = (field: string, v: string, max: number, min = 0): string => {
  const t = v.trim();
  if (Array.from(t).length < min || Array.from(t).length > max) invalid(field, `must be ${min} to ${max} characters`);
  return t;
};

/** avatar_url: an absolute https URL without credentials. */
export function avatarUrl(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    return invalid("avatar_url", "must be an absolute https URL");
  }
  if (u.protocol !== "https:") invalid("avatar_url", "must be an https URL");
  if (u.username || u.password) invalid("avatar_url", "must not carry credentials");
  if (v.length > MAX_URL) invalid("avatar_url", `must be at most ${MAX_URL} characters`);
  return u.toString();
}

function proofItems(items: ProfileChange["proofs"]): ProfileProofItem[] {
  if (items.length > MAX_PROOFS) invalid("proofs", `at most ${MAX_PROOFS} proofs`);
  const seen = new Set<string>();
  return items.map((p, i) => {
    const at = `proofs.${i}`;
    if (!isId("verification", p.verificationId)) invalid(`${at}.verification_id`, "must be a verification id");
    if (seen.has(p.verificationId)) invalid(`${at}.verification_id`, "is listed twice");
    seen.add(p.verificationId);
    if (!(MASK_LEVELS as readonly string[]).includes(p.maskLevel)) invalid(`${at}.mask_level`, `must be one of ${MASK_LEVELS.join(", ")}`);
    if (!Number.isInteger(p.displayOrder) || p.displayOrder < 0 || p.displayOrder > MAX_DISPLAY_ORDER)
      invalid(`${at}.display_order`, `must be an integer 0 to ${MAX_DISPLAY_ORDER}`);
    return {
      verification_id: p.verificationId,
      label: text(`${at}.label`, p.label, MAX_LABEL),
      mask_level: p.maskLevel as MaskLevel,
      display_order: p.displayOrder,
    };
  });
}

/** The fields after `change` is applied to `current` (a create starts from nothing: display_name is required). */
export function applyChange(current: ProfileFields | undefined, change: ProfileChange): ProfileFields {
  const name = change.displayName ?? current?.display_name;
  if (name === undefined) invalid("display_name", "is required");
  return {
    display_name: text("display_name", name!, MAX_DISPLAY_NAME, 1),
    bio: change.clearBio ? null : change.bio !== undefined ? text("bio", change.bio, MAX_BIO) || null : (current?.bio ?? null),
    avatar_url: change.clearAvatarUrl ? null : change.avatarUrl !== undefined ? avatarUrl(change.avatarUrl) : (current?.avatar_url ?? null),
    is_public: change.isPublic ?? current?.is_public ?? false,
    proofs: change.setProofs ? proofItems(change.proofs) : (current?.proofs ?? []),
  };
}
