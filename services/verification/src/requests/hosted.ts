import { CHANNELS_BY_TYPE, type AssetType, type Config } from "@icv/platform";
import type { HostedForm, Method } from "../channels/channel.ts";
import { channelFor } from "../channels/registry.ts";
import type { DomainCheckRow, RequestView, VerificationRow } from "../store/index.ts";
import type { HostedBranding } from "./branding.ts";

/** An open challenge as the hosted page shows it. */
export interface HostedChallenge {
  /** Phone channels: the code the user sends (it is in the instruction and deep link anyway). */
  code?: string;
  instruction: string;
  deepLink?: string;
  /** Wallets: the text to sign. Domains: the DNS record / HTTP file value. */
  message?: string;
  expiresAt: Date;
  attemptsRemaining: number;
}

export interface HostedAsset {
  idx: number;
  type: string;
  identifier: string | null;
  channel: string | null;
  /** The channels the user may choose from (allowed_channels, else the set channel, else every channel of the type). */
  channels: string[];
  /** Those of `channels` that can run here (provider configured, or a test-mode request). */
  available: string[];
  /** The hosted-page form of each of `channels`, as data (the page names no channel). */
  forms: Record<string, HostedForm>;
  required: boolean;
  status: string;
  verificationId: string | null;
  /** How the open challenge is completed: code, signature, bot_token, domain_check or oauth. */
  method?: Method;
  /** Phone, while open: inbound (the page shows the code to send from the phone) or outbound (the page asks for the code we sent). */
  delivery?: "inbound" | "outbound";
  challenge?: HostedChallenge;
  /** Domain assets checked by DNS or HTTP, while open or verified: the check state (what to publish, what the last check or re-check saw). */
  domain?: DomainCheckRow;
}

export interface HostedView {
  request: RequestView;
  assets: HostedAsset[];
  /** Where the page sends the user once the request settled: redirect_url with request_id and status. */
  redirectTo?: string;
  /** The token's request has expired: the page only learns the final status. */
  tokenExpired: boolean;
  /** The request's project branding (branding.ts). */
  branding?: HostedBranding;
}

const FINAL = new Set(["completed", "expired", "cancelled"]);

/** redirect_url with `request_id` and `status` appended, once the request is final (or partial with partial_ok). */
export function redirectTarget(r: RequestView): string | undefined {
  if (!r.redirect_url) return undefined;
  if (!FINAL.has(r.status) && !(r.status === "partial" && r.partial_ok)) return undefined;
  const url = new URL(r.redirect_url);
  url.searchParams.set("request_id", r.id);
  url.searchParams.set("status", r.status);
  return url.toString();
}

/** The code inside a phone challenge's deep link (t.me ?start=, wa.me ?text=, sms: ?body=). */
export function phoneCodeOf(deepLink: string | null): string | undefined {
  if (!deepLink) return undefined;
  const query = deepLink.includes("?") ? deepLink.slice(deepLink.indexOf("?") + 1) : "";
  const p = new URLSearchParams(query);
  const code = p.get("start") ?? p.get("text") ?? p.get("body") ?? "";
  return /^[A-Z0-9]{6}$/.test(code) ? code : undefined;
}

export function hostedAssets(
  r: RequestView,
  rows: Map<number, VerificationRow>,
  config: Config,
  shown?: { idx: number; code: string },
  domains: Map<string, DomainCheckRow> = new Map(),
): HostedAsset[] {
  return r.assets.map((a) => {
    const type = a.type as AssetType;
    const channels = a.allowed_channels ?? (a.channel ? [a.channel] : [...CHANNELS_BY_TYPE[type]]);
    const v = rows.get(a.idx);
    const current = v && channelFor(type, v.channel);
    // the form of every channel the page may start, and of the open verification's
    const forms = Object.fromEntries([...channels, ...(v ? [v.channel] : [])].map((c) => [c, channelFor(type, c).form]));
    const startable = channels.filter((c) => forms[c].startable !== false);
    const available = r.environment === "test" ? startable : startable.filter((c) => !channelFor(type, c).missingProvider(config).length);
    const open = v && v.status === "pending";
    return {
      idx: a.idx,
      type: a.type,
      identifier: a.identifier,
      channel: a.channel,
      channels,
      available,
      forms,
      required: a.required,
      verificationId: a.verification_id,
      status: !v || a.status === "expired" ? a.status : v.status === "pending" ? "in_progress" : v.status === "revoked" ? "failed" : v.status,
      method: open ? current?.method : undefined,
      delivery: open && v.delivery ? v.delivery : undefined,
      domain:
        open && current?.method === "domain_check"
          ? domains.get(v.id)
          : a.status === "verified" && a.verification_id
            ? domains.get(a.verification_id)
            : undefined,
      challenge: open
        ? {
            // only a reverse-OTP code is ever shown (the user sends it from the phone); an outbound code never is
            code: current?.form.step === "send_code" && v.delivery !== "outbound" ? (shown?.idx === a.idx ? shown.code : phoneCodeOf(v.deep_link)) : undefined,
            instruction: v.instruction,
            deepLink: v.deep_link ?? undefined,
            message: v.challenge_message ?? undefined,
            expiresAt: v.challenge_expires_at,
            attemptsRemaining: Math.max(0, v.max_attempts - v.attempts),
          }
        : undefined,
    };
  });
}
