// The profile rules as plain functions: a listed proof's public state (the proof service's word,
// never better than our row), the identifier per mask level, and the field checks any RPC caller
// meets (not only the gateway's schemas).
import { describe, expect, it } from "vitest";
import { AppError, newId } from "@icv/platform";
import { applyChange, type ProfileChange } from "../src/profiles/input.ts";
import { publicStatus, shownIdentifier } from "../src/profiles/index.ts";
import type { ListedVerification, ProfileProofItem } from "../src/store/index.ts";

const now = new Date("2026-11-24T12:00:00.000Z");
const later = new Date(now.getTime() + 3_600_000);
const row = (over: Partial<ListedVerification> = {}): ListedVerification => ({
  id: newId("verification"),
  type: "email",
  channel: "email",
  identifier: "john.doe@example.com",
  status: "verified",
  verified_at: now,
  proof_expires_at: later,
  revoked_at: null,
  ...over,
});
const proof = (over = {}) => ({ isRevoked: false, isExpired: false, revokedAt: null, expiresAt: later, ...over });

describe("a listed proof's public status", () => {
  it("is valid only when the verification is verified and the proof service says it is neither revoked nor expired", () => {
    expect(publicStatus(row(), proof(), now)).toBe("valid");
  });
  it("is revoked when the proof service says so, even before our row followed", () => {
    expect(publicStatus(row(), proof({ isRevoked: true, revokedAt: now }), now)).toBe("revoked");
    expect(publicStatus(row({ status: "revoked" }), proof(), now)).toBe("revoked");
  });
  it("is expired when the proof has expired (by the proof service's flag or its expiry time)", () => {
    expect(publicStatus(row(), proof({ isExpired: true }), now)).toBe("expired");
    expect(publicStatus(row(), proof({ expiresAt: now }), now)).toBe("expired");
  });
  it("is suspended when the proof service says so (even before our row followed) or our row does, never valid; revoked and expired come first", () => {
    expect(publicStatus(row(), proof({ isSuspended: true }), now)).toBe("suspended");
    expect(publicStatus(row({ status: "suspended" }), proof(), now)).toBe("suspended");
    expect(publicStatus(row({ status: "suspended" }), proof({ isRevoked: true, revokedAt: now }), now)).toBe("revoked");
    expect(publicStatus(row({ status: "suspended" }), proof({ isExpired: true }), now)).toBe("expired");
  });
  it("is invalid when the proof service knows no such proof", () => {
    expect(publicStatus(row(), undefined, now)).toBe("invalid");
  });
});

describe("the identifier a mask level shows", () => {
  const item = (mask_level: ProfileProofItem["mask_level"]): ProfileProofItem => ({
    verification_id: "ver_x",
    label: "",
    mask_level,
    display_order: 0,
  });
  it("full, partial (DECISIONS masking) or nothing", () => {
    expect(shownIdentifier(row(), item("full"))).toBe("john.doe@example.com");
    expect(shownIdentifier(row(), item("partial"))).toBe("j***e@example.com");
    expect(shownIdentifier(row({ type: "phone", channel: "sms", identifier: "+37069199199" }), item("partial"))).toBe("+3706***9199");
    expect(shownIdentifier(row(), item("hidden"))).toBeUndefined();
  });
});

describe("profile fields", () => {
  const change = (over: Partial<ProfileChange> = {}): ProfileChange => ({
    setProofs: false,
    proofs: [],
    clearBio: false,
    clearAvatarUrl: false,
    ...over,
  });
  const field = (f: () => unknown) => {
    try {
      f();
    } catch (e) {
      expect(e).toBeInstanceOf(AppError);
      return (e as AppError).details?.[0]?.field;
    }
    throw new Error("no error");
  };
  const v = newId("verification");

  it("needs a display name on create and keeps unchanged members on update", () => {
    expect(field(() => applyChange(undefined, change()))).toBe("display_name");
    const made = applyChange(
      undefined,
      change({
        displayName: " Acme ",
        bio: "b",
        avatarUrl: "https://x.example/a.png",
        setProofs: true,
        proofs: [{ verificationId: v, label: "L", maskLevel: "full", displayOrder: 0 }],
      }),
    );
    expect(made).toEqual({
      display_name: "Acme",
      bio: "b",
      avatar_url: "https://x.example/a.png",
      is_public: false,
      proofs: [{ verification_id: v, label: "L", mask_level: "full", display_order: 0 }],
    });
    expect(applyChange(made, change({ isPublic: true, clearBio: true }))).toEqual({ ...made, bio: null, is_public: true });
  });

  it("refuses a non-https avatar, over 50 proofs, a repeated or malformed id and an unknown mask level", () => {
    for (const url of ["http://x.example/a.png", "javascript:alert(1)", "data:image/png;base64,AAAA", "https://user:pw@x.example/a.png", "not a url"]) {
      expect(
        field(() => applyChange(undefined, change({ displayName: "A", avatarUrl: url }))),
        url,
      ).toBe("avatar_url");
    }
    const item = (verificationId: string, maskLevel = "partial") => ({ verificationId, label: "", maskLevel, displayOrder: 0 });
    const many = Array.from({ length: 51 }, () => item(newId("verification")));
    expect(field(() => applyChange(undefined, change({ displayName: "A", setProofs: true, proofs: many })))).toBe("proofs");
    expect(field(() => applyChange(undefined, change({ displayName: "A", setProofs: true, proofs: [item(v), item(v)] })))).toBe("proofs.1.verification_id");
    expect(field(() => applyChange(undefined, change({ displayName: "A", setProofs: true, proofs: [item("prf_nope")] })))).toBe("proofs.0.verification_id");
    expect(field(() => applyChange(undefined, change({ displayName: "A", setProofs: true, proofs: [item(v, "most")] })))).toBe("proofs.0.mask_level");
  });
});
