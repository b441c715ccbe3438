import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { Client } from "@connectrpc/connect";
import type { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { AppError, type Config, type Logger } from "@icv/platform";
import { sendError } from "../http.ts";
import type { RateLimiter } from "../rate-limit.ts";
import { secretTokenValid, twilioSignatureValid, whatsappSignatureValid } from "./signatures.ts";

/** Provider payloads are larger than API bodies (WhatsApp batches messages and statuses). */
export const HOOK_BODY_BYTES = 256 * 1024;

export interface HookDeps {
  config: Config;
  logger: Logger;
  session: Client<typeof SessionService>;
  limiter: RateLimiter;
}

/**
 * The providers' inbound webhooks, public and outside the tenant API:
 * - `POST /hooks/telegram`: `X-Telegram-Bot-Api-Secret-Token` must be TELEGRAM_WEBHOOK_SECRET;
 * - `GET /hooks/whatsapp`: Meta's verification handshake (hub.verify_token = WHATSAPP_VERIFY_TOKEN);
 * - `POST /hooks/whatsapp`: `X-Hub-Signature-256` over the raw body with WHATSAPP_APP_SECRET;
 * - `POST /hooks/sms`: Twilio's `X-Twilio-Signature` over {PUBLIC_BASE_URL}/hooks/sms and the form.
 * The gateway only checks the signature and hands the raw update to the session service; an
 * unsigned or badly signed hook is 401 and changes nothing (and repeated failures from one IP are
 * throttled like failed API keys). A provider that is not configured has no hook (404).
 */
export function mountProviderHooks(app: Express, d: HookDeps): void {
  const { config } = d;
  const raw = express.raw({ type: () => true, limit: HOOK_BODY_BYTES });

  const body = (req: Request): Buffer => (Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0));
  const refuse = async (req: Request, res: Response, what: string) => {
    const decision = await d.limiter.consume(`hookfail:${req.ip}`, config.AUTH_FAILURES_PER_MINUTE);
    d.logger.warn({ request_id: req.requestId, path: req.path, ip: req.ip }, `${what} hook refused: bad signature`);
    if (!decision.allowed)
      return sendError(res, req, new AppError("rate_limited", "too many badly signed requests", { extra: { retry_after: decision.retryAfter } }));
    sendError(res, req, new AppError("unauthorized", "the request is not signed by the provider"));
  };
  const forward = async (req: Request, provider: string, answer: () => void) => {
    const r = await d.session.handleInbound({ provider, body: body(req) });
    d.logger.info({ request_id: req.requestId, provider, outcomes: r.outcomes }, "provider hook");
    answer();
  };
  const wrap = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
    fn(req, res).catch(next);
  };

  if (config.TELEGRAM_BOT_TOKEN && config.TELEGRAM_WEBHOOK_SECRET && config.TELEGRAM_MODE === "webhook") {
    const secret = config.TELEGRAM_WEBHOOK_SECRET;
    app.post(
      "/hooks/telegram",
      raw,
      wrap(async (req, res) => {
        if (!secretTokenValid(secret, req.get("x-telegram-bot-api-secret-token"))) return refuse(req, res, "telegram");
        await forward(req, "telegram", () => res.status(200).json({ ok: true }));
      }),
    );
  }

  if (config.WHATSAPP_APP_SECRET) {
    const appSecret = config.WHATSAPP_APP_SECRET;
    const verifyToken = config.WHATSAPP_VERIFY_TOKEN;
    app.get("/hooks/whatsapp", (req, res) => {
      const q = req.query as Record<string, string | undefined>;
      if (q["hub.mode"] === "subscribe" && verifyToken && secretTokenValid(verifyToken, q["hub.verify_token"]) && q["hub.challenge"]) {
        res.status(200).type("text/plain").send(q["hub.challenge"]);
        return;
      }
      sendError(res, req, new AppError("forbidden", "verification token mismatch"));
    });
    app.post(
      "/hooks/whatsapp",
      raw,
      wrap(async (req, res) => {
        if (!whatsappSignatureValid(appSecret, body(req), req.get("x-hub-signature-256"))) return refuse(req, res, "whatsapp");
        await forward(req, "whatsapp", () => res.status(200).json({ ok: true }));
      }),
    );
  }

  if (config.TWILIO_AUTH_TOKEN) {
    const authToken = config.TWILIO_AUTH_TOKEN;
    const url = `${config.publicBaseUrl}/hooks/sms`;
    app.post(
      "/hooks/sms",
      raw,
      wrap(async (req, res) => {
        const params: Record<string, string> = {};
        for (const [k, v] of new URLSearchParams(body(req).toString("utf8"))) params[k] = v;
        if (!twilioSignatureValid(authToken, url, params, req.get("x-twilio-signature"))) return refuse(req, res, "sms");
        // replies go out through the Messages API, so the TwiML answer is empty
        await forward(req, "sms", () => res.status(200).type("text/xml").send('<?xml version="1.0" encoding="UTF-8"?><Response></Response>'));
      }),
    );
  }
}
