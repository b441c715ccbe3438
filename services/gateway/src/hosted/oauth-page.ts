/**
 * The small page an end user sees around an OAuth sign-in (/oauth/{channel}/start and /callback):
 * verified, wrong account, expired, … in the hosted page's style and under its strict CSP (no
 * script at all: a verified sign-in with a place to go moves on by a meta refresh).
 */
import type { Response } from "express";
import type { OAuthOutcome } from "@icv/contracts/gen/icv/verification/v1/verification_service_pb.ts";
import { PAGE_CSP } from "./page.ts";

const NAMES: Record<string, string> = {
  github: "GitHub",
  google: "Google",
  facebook: "Facebook",
  x: "X",
  linkedin: "LinkedIn",
  instagram: "Instagram",
  youtube: "YouTube",
  tiktok: "TikTok",
  coinbase: "Coinbase",
};

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Title and message of each outcome. */
function wordsOf(o: OAuthOutcome): { title: string; text: string } {
  const name = NAMES[o.channel] ?? "the provider";
  const who = o.identifier ? ` as ${o.identifier}` : "";
  switch (o.outcome) {
    case "verified":
      return { title: "Verified", text: `You signed in with ${name}${who}. The account is verified.` };
    case "already_verified":
      return { title: "Already verified", text: `This ${name} account was already verified.` };
    case "test_mode":
      return {
        title: "Test mode",
        text: `This is a test verification: no ${name} sign-in happens. Complete it with test-verify (the API, or the test button on the hosted page).`,
      };
    case "mismatch":
      return {
        title: "Wrong account",
        text: `You signed in with another ${name} account, not${who || " the one asked for"} (identifier_mismatch). ${o.attemptsRemaining} attempt${o.attemptsRemaining === 1 ? "" : "s"} left.`,
      };
    case "failed":
      return { title: "Verification failed", text: "Too many sign-ins with another account: this verification has failed." };
    case "expired":
      return { title: "Expired", text: "This verification has expired. Ask for a new one." };
    case "denied":
      return { title: "Sign-in cancelled", text: `The ${name} sign-in was cancelled; nothing was verified.` };
    case "provider_error":
      return { title: "Sign-in failed", text: `${name} did not complete the sign-in; nothing was verified. Try again.` };
    case "unavailable":
      return { title: "Not available", text: `Sign-in with ${name} is not configured on this service.` };
    default:
      return { title: "Link not valid", text: "This sign-in link is not valid: it was already used, has been changed, or has expired." };
  }
}

export function sendOAuthPage(res: Response, o: OAuthOutcome): void {
  const { title, text } = wordsOf(o);
  const links = [
    o.retryUrl ? `<a class="button" id="retry" href="${esc(o.retryUrl)}">Sign in with ${esc(NAMES[o.channel] ?? "the provider")} again</a>` : "",
    o.returnUrl ? `<a class="button secondary" id="continue" href="${esc(o.returnUrl)}">Continue</a>` : "",
  ].join("");
  const refresh = o.outcome === "verified" && o.returnUrl ? `<meta http-equiv="refresh" content="3;url=${esc(o.returnUrl)}">` : "";
  const ok = o.outcome === "verified" || o.outcome === "already_verified" || o.outcome === "test_mode";
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
${refresh}<title>${esc(title)}</title>
<link rel="stylesheet" href="/hosted/page.css">
</head>
<body>
<main id="main">
<h1 id="title">${esc(title)}</h1>
<p id="outcome" data-outcome="${esc(o.outcome)}" class="${ok ? "final" : "alert"}" role="${ok ? "status" : "alert"}">${esc(text)}</p>
<p>${links}</p>
</main>
</body>
</html>`;
  // a page for a browser: 200 whatever happened (the outcome is in the page, data-outcome for scripts);
  // a malformed request still gets the API's 4xx error shape before it reaches here
  res.status(200);
  res.setHeader("Content-Type", "text/html; charset=utf-8");
  res.setHeader("Content-Security-Policy", PAGE_CSP);
  res.setHeader("Referrer-Policy", "no-referrer");
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("Cache-Control", "no-store");
  res.end(html);
}
