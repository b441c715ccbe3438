import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

/** A real SMTP server on loopback that keeps what it receives (no TLS, no auth). */
export async function startSmtp(): Promise<{
  url: string;
  inbox: ReceivedMail[];
  waitFor(to: string, ms?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}> {
  const inbox: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    // close() waits this long for open connections (the default is 30 s): a stack's pooled SMTP
    // connection stays open after the stack closes
    closeTimeout: 100,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        inbox.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    inbox,
    async waitFor(to, ms = 5_000) {
      const until = Date.now() + ms;
      for (;;) {
        const m = inbox.find((x) => x.to.includes(to));
        if (m) return m;
        if (Date.now() > until) throw new Error(`no mail to ${to} within ${ms} ms`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
