// `npm run admin -- internal-client cert|list`: certificates for internal teams' gRPC clients,
// signed by the data dir's CA, and the clients of INTERNAL_CLIENTS_FILE. Neither talks to a
// running service (docs/internal-clients.md).
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { X509Certificate } from "node:crypto";
import path from "node:path";
import { clientNameProblem, InternalClientsError, issueCertificate, readInternalClients, writeAtomic, type Config } from "@icv/platform";

const DAY = 24 * 3600_000;

export interface InternalClientArgs {
  verb: string;
  name?: string;
  out?: string;
  days?: string;
  file?: string;
}

type Print = (json: unknown, text: string) => void;
type Fail = (msg: string) => never;

export async function internalClient(config: Config, a: InternalClientArgs, print: Print, fail: Fail): Promise<void> {
  if (a.verb === "cert") return cert(config, a, print, fail);
  if (a.verb === "list") return list(config, a, print, fail);
  fail("internal-client takes cert --name NAME --out DIR [--days N], or list [--file FILE]");
}

async function cert(config: Config, a: InternalClientArgs, print: Print, fail: Fail): Promise<void> {
  if (!a.name || !a.out) fail("internal-client cert needs --name NAME --out DIR [--days N]");
  const problem = clientNameProblem(a.name);
  if (problem) fail(`internal-client cert: ${problem}`);
  const days = a.days === undefined ? 90 : Number(a.days);
  if (!Number.isInteger(days) || days < 1 || days > 825) fail("internal-client cert: --days must be a whole number from 1 to 825");
  const caFiles = { cert: path.join(config.tlsDir, "ca.crt"), key: path.join(config.tlsDir, "ca.key") };
  if (!existsSync(caFiles.cert) || !existsSync(caFiles.key))
    fail(
      `internal-client cert: no CA in ${config.tlsDir} (ca.crt and ca.key): start the service once with this DATA_DIR (or TLS_DIR), or run this where they are`,
    );
  const ca = { cert: readFileSync(caFiles.cert, "utf8"), key: readFileSync(caFiles.key, "utf8") };
  const leaf = await issueCertificate(ca, a.name, { notAfter: new Date(Date.now() + days * DAY) });
  mkdirSync(a.out, { recursive: true, mode: 0o700 });
  const files = { cert: path.join(a.out, `${a.name}.crt`), key: path.join(a.out, `${a.name}.key`), ca: path.join(a.out, "ca.crt") };
  // whole files: two certificates issued at once into one directory both write its ca.crt
  writeAtomic(files.key, leaf.key, 0o600);
  writeAtomic(files.cert, leaf.cert, 0o644);
  writeAtomic(files.ca, ca.cert, 0o644);
  const notAfter = new Date(new X509Certificate(leaf.cert).validTo).toISOString();
  let listed: boolean | undefined;
  if (config.INTERNAL_CLIENTS_FILE) {
    try {
      listed = readInternalClients(config.INTERNAL_CLIENTS_FILE).some((c) => c.name === a.name);
    } catch {
      listed = undefined;
    }
  }
  print(
    { name: a.name, cert: files.cert, key: files.key, ca: files.ca, not_after: notAfter, in_clients_file: listed ?? null },
    [
      `certificate for ${a.name} (valid until ${notAfter})`,
      `  ${files.cert}\n  ${files.key} (private key, mode 0600)\n  ${files.ca} (the CA the services present)`,
      listed === false ? `note: ${a.name} is not in ${config.INTERNAL_CLIENTS_FILE} yet: every call is PERMISSION_DENIED until it is (then SIGHUP)` : "",
      !config.INTERNAL_CLIENTS_FILE ? `note: INTERNAL_CLIENTS_FILE is not set: the services allow no internal client until it names ${a.name}` : "",
    ]
      .filter(Boolean)
      .join("\n"),
  );
}

function list(config: Config, a: InternalClientArgs, print: Print, fail: Fail): void {
  const file = a.file ?? config.INTERNAL_CLIENTS_FILE;
  if (!file) fail("internal-client list needs INTERNAL_CLIENTS_FILE (or --file FILE)");
  try {
    const clients = readInternalClients(file);
    const rows = clients.map((c) => ({ name: c.name, allow: c.allow, rate_per_minute: c.ratePerMinute ?? config.INTERNAL_CLIENT_RATE_PER_MINUTE }));
    print(rows, rows.map((c) => `${c.name}  ${c.rate_per_minute}/min  ${c.allow.join(", ")}`).join("\n") || `(no clients in ${file})`);
  } catch (e) {
    if (e instanceof InternalClientsError) fail(`internal-client list: ${e.message}`);
    throw e;
  }
}
