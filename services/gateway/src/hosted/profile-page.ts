import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@connectrpc/connect";
import type { Express, NextFunction, Request, RequestHandler, Response } from "express";
import type { ProfileService } from "@icv/contracts/gen/icv/verification/v1/profile_service_pb.ts";
import { toPublicProfile, type PublicProfileBody } from "../profile-schemas.ts";
import { pageHeaders } from "./page.ts";

const CSS = readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), "profile.css"));
const CSS_PATH = "/p/assets/profile.css";

/** No script at all; styles from our own file; images only from here and the avatar's own https origin. */
export function profileCsp(avatarUrl: string | null): string {
  const avatarOrigin = avatarUrl && URL.canParse(avatarUrl) && new URL(avatarUrl).protocol === "https:" ? ` ${new URL(avatarUrl).origin}` : "";
  return `default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self'${avatarOrigin}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
}

const ESC: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
/** Escapes text for HTML content and double-quoted attributes. */
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ESC[c]);

const TYPE_NAMES: Record<string, string> = {
  phone: "Phone",
  email: "Email",
  domain: "Domain",
  social: "Social account",
  wallet: "Wallet",
  account: "Exchange account",
  telegram_bot: "Telegram bot",
};
const day = (iso: string | null) => (iso ? `<time datetime="${esc(iso)}">${esc(iso.slice(0, 10))}</time>` : "—");

function statusText(p: PublicProfileBody["proofs"][number]): string {
  if (p.status === "valid") return "Verified";
  if (p.status === "revoked") return "Revoked";
  if (p.status === "expired") return "Expired";
  if (p.status === "suspended") return "Suspended";
  return "Not valid";
}

/** "logged", linking to the public inclusion proof of the proof's entry in the transparency log of its environment. */
function logged(p: PublicProfileBody["proofs"][number], test: boolean): string {
  if (p.log_index === null) return "";
  const href = `/api/v1/log/proof?leaf_index=${p.log_index}${test ? "&env=test" : ""}`;
  return `\n<dt>Transparency log</dt><dd><a class="logged" href="${esc(href)}">logged</a></dd>`;
}

function proofItem(p: PublicProfileBody["proofs"][number], test: boolean): string {
  const type = TYPE_NAMES[p.type] ?? p.type;
  const when =
    p.status === "revoked"
      ? `<dt>Revoked</dt><dd>${day(p.revoked_at)}</dd>`
      : p.status === "expired"
        ? `<dt>Expired</dt><dd>${day(p.expires_at)}</dd>`
        : `<dt>Valid until</dt><dd>${day(p.expires_at)}</dd>`;
  return `<li class="proof proof-${esc(p.status)}">
<div class="proof-head"><h3>${esc(p.label || type)}</h3><span class="status">${statusText(p)}</span></div>
<dl><dt>Type</dt><dd>${esc(type)} · ${esc(p.channel)}</dd>
<dt>Identifier</dt><dd>${p.identifier === null ? "Hidden" : esc(p.identifier)}</dd>
<dt>Verified</dt><dd>${day(p.verified_at)}</dd>
${when}${logged(p, test)}</dl></li>`;
}

/** The page: server-rendered, no script; every value escaped. */
export function renderProfile(p: PublicProfileBody): string {
  const initial = Array.from(p.display_name.trim())[0]?.toUpperCase() ?? "?";
  const avatar = p.avatar_url
    ? `<img class="avatar" src="${esc(p.avatar_url)}" alt="" referrerpolicy="no-referrer" width="64" height="64">`
    : `<div class="avatar" aria-hidden="true">${esc(initial)}</div>`;
  const proofs = p.proofs.length ? `<ul class="proofs">${p.proofs.map((x) => proofItem(x, p.test)).join("\n")}</ul>` : `<p>No verified assets are listed.</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(p.display_name)} · verified profile</title>
<link rel="stylesheet" href="${CSS_PATH}">
<link rel="alternate" type="application/json" href="/p/${esc(p.id)}.json">
</head>
<body>
<main>
${p.test ? `<p class="note" role="note">Test mode: these are test proofs, not proofs of real assets.</p>` : ""}
<header class="head">${avatar}<div><h1>${esc(p.display_name)}</h1><p>Verified profile</p></div></header>
${p.bio ? `<p class="bio">${esc(p.bio)}</p>` : ""}
<section aria-labelledby="assets"><h2 id="assets">Verified assets</h2>
${proofs}
</section>
<footer>Each proof was checked when this page was made (<time datetime="${esc(p.checked_at)}">${esc(p.checked_at.replace("T", " ").slice(0, 19))} UTC</time>). <a href="/p/${esc(p.id)}.json">This profile as JSON</a></footer>
</main>
</body>
</html>
`;
}

/** GET /p/{id}: a public profile's page (404 unless it exists and is public), and its stylesheet. */
export function mountProfilePage(app: Express, limit: RequestHandler, profiles: Client<typeof ProfileService>): void {
  app.get(CSS_PATH, limit, (_req, res) => {
    res.setHeader("Content-Type", "text/css; charset=utf-8");
    pageHeaders(res, profileCsp(null));
    res.status(200).end(CSS);
  });
  app.get("/p/:id", limit, async (req: Request, res: Response, next: NextFunction) => {
    try {
      const id = String(req.params.id);
      if (id.length > 64) return next();
      const body = toPublicProfile(await profiles.getPublicProfile({ id }));
      res.setHeader("Content-Type", "text/html; charset=utf-8");
      pageHeaders(res, profileCsp(body.avatar_url));
      res.status(200).end(renderProfile(body));
    } catch (e) {
      next(e);
    }
  });
}
