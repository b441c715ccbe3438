import express, { type Express, type NextFunction, type Request, type Response } from "express";
import type { Client } from "@connectrpc/connect";
import type { SessionService } from "@icv/contracts/gen/icv/session/v1/session_service_pb.ts";
import { AppError, messagingProviders, type Config, type Logger } from "@icv/platform";
import { sendError } from "../http.ts";
import type { RateLimiter } from "../rate-limit.ts";

/** Provider payloads are larger than API bodies (WhatsApp batches messages and statuses). */
export const HOOK_BODY_BYTES = 256 * 1024;

export interface HookDeps {
  config: Config;
  logger: Logger;
  session: Client<typeof SessionService>;
  limiter: RateLimiter;
}

/**
 * The messaging providers' inbound webhooks, public and outside the tenant API: one route
 * `POST /hooks/<provider>` per configured provider of the table (@icv/platform messaging), and
 * `GET` where the provider has a subscription handshake (WhatsApp's hub.verify_token). Each
 * provider's file checks its signature (Telegram's secret token, WhatsApp's X-Hub-Signature-256,
 * Twilio's X-Twilio-Signature over {PUBLIC_BASE_URL}/hooks/sms, Viber's X-Viber-Content-Signature).
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
  const wrap = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
    fn(req, res).catch(next);
  };

  for (const [provider, p] of messagingProviders()) {
    const hook = p.hook(config);
    if (!hook) continue;
    const path = `/hooks/${provider}`;
    const url = `${config.publicBaseUrl}${path}`;
    if (hook.handshake) {
      const handshake = hook.handshake;
      app.get(path, (req, res) => {
        const challenge = handshake(req.query as Record<string, unknown>);
        if (challenge !== undefined) {
          res.status(200).type("text/plain").send(challenge);
          return;
        }
        sendError(res, req, new AppError("forbidden", "verification token mismatch"));
      });
    }
    app.post(
      path,
      raw,
      wrap(async (req, res) => {
        if (!hook.verify({ body: body(req), header: (name) => req.get(name), url })) return refuse(req, res, provider);
        const r = await d.session.handleInbound({ provider, body: body(req) });
        d.logger.info({ request_id: req.requestId, provider, outcomes: r.outcomes }, "provider hook");
        res
          .status(200)
          .type(hook.answer.type)
          .send(r.answer ?? hook.answer.body);
      }),
    );
  }
}
