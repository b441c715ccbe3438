// @peculiar/x509 resolves its ASN.1 and algorithm classes through tsyringe, which needs the Reflect metadata API
import { webcrypto, X509Certificate } from "node:crypto";
import { existsSync, linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { stat } from "node:fs/promises";
import path from "node:path";
import tls from "node:tls";
import type * as X509 from "@peculiar/x509";
import type { Config } from "./config.ts";
import type { Logger } from "./logger.ts";

/** The names internal certificates carry (SAN DNS and CN): one per service. */
export const INTERNAL_NAMES = ["gateway", "verification", "proof", "session", "domain", "webhook", "log"] as const;
export type InternalName = (typeof INTERNAL_NAMES)[number];

/** ECDSA P-256 with SHA-256: small keys, fast handshakes. */
const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const DAY = 24 * 3600_000;
/** A generated leaf certificate lives a year; it is issued again on a start within 30 days of its end. */
const LEAF_DAYS = 365;
const RENEW_DAYS = 30;
/** @peculiar/x509 (with the reflect-metadata it needs), loaded when a certificate is made: a start that finds its certificates never loads it. */
let x509Module: Promise<typeof X509> | undefined;
const loadX509 = () =>
  (x509Module ??= import("reflect-metadata").then(async () => {
    const x509 = await import("@peculiar/x509");
    x509.cryptoProvider.set(webcrypto as unknown as Crypto);
    return x509;
  }));

/** A certificate and its private key, PEM. */
export interface CertKey {
  cert: string;
  key: string;
}

async function keyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"])) as unknown as CryptoKeyPair;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const x509 = await loadX509();
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey("pkcs8", key as webcrypto.CryptoKey), "PRIVATE KEY");
}

/** A new certificate authority for the internal certificates (ten years). */
export async function createCa(commonName = "ICV internal CA", notAfter = new Date(Date.now() + 10 * 365 * DAY)): Promise<CertKey> {
  const x509 = await loadX509();
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${commonName}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter,
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString("pem"), key: await keyPem(keys.privateKey) };
}

/** A certificate naming `name` (CN and SAN DNS), for both sides of a connection, signed by `ca`. */
export async function issueCertificate(ca: CertKey, name: string, validity: { notBefore?: Date; notAfter?: Date } = {}): Promise<CertKey> {
  const x509 = await loadX509();
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await webcrypto.subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(ca.key), ALG, false, ["sign"]);
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${name}`,
    issuer: caCert.subject,
    notBefore: validity.notBefore ?? new Date(Date.now() - 60_000),
    notAfter: validity.notAfter ?? new Date(Date.now() + LEAF_DAYS * DAY),
    publicKey: keys.publicKey,
    signingKey: caKey as unknown as CryptoKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: "dns", value: name }]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { cert: cert.toString("pem"), key: await keyPem(keys.privateKey) };
}

/** Writes a file whole (temp file, then rename), so a reader (a reloader, another process) never reads half of it. */
export function writeAtomic(file: string, data: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode });
  renameSync(tmp, file);
}

/** Writes `file` only if it is not there yet (a temp file linked into place); false: another process made it first. */
function writeIfAbsent(file: string, data: string, mode: number): boolean {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, data, { mode });
  try {
    linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    return false;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Where the files of one identity are. */
export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/** The files of `name` in a directory laid out by ensureTlsDir. */
export function tlsDirFiles(dir: string, name: string): TlsFiles {
  return { ca: path.join(dir, "ca.crt"), cert: path.join(dir, `${name}.crt`), key: path.join(dir, `${name}.key`) };
}

const preparing = new Map<string, Promise<void>>();

/**
 * The embedded default: a CA (`ca.crt`, `ca.key`) and one certificate per service
 * (`<name>.crt`, `<name>.key`) in `dir`, made on first use (keys mode 0600) and issued again
 * when missing or near their end. Production mounts its own files instead (TLS_*_FILE).
 */
export function ensureTlsDir(dir: string, logger: Logger): Promise<void> {
  const key = path.resolve(dir);
  let p = preparing.get(key);
  if (!p) {
    // shared by the services starting together in one process; a later start looks again
    p = prepareDir(key, logger).finally(() => preparing.delete(key));
    preparing.set(key, p);
  }
  return p;
}

/**
 * One process at a time prepares the directory (a lock file linked into place): processes
 * starting together on one data dir (a split deployment's first start) must trust one CA, and
 * read no certificate whose key another is replacing. The others wait, then find the files made.
 * A lock held for 30 s is a start that stopped while preparing: it is taken over.
 */
async function prepareDir(dir: string, logger: Logger): Promise<void> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = path.join(dir, ".preparing");
  for (let end = Date.now() + 30_000; !writeIfAbsent(lock, String(process.pid), 0o600); await new Promise((r) => setTimeout(r, 50))) {
    if (Date.now() < end) continue;
    rmSync(lock, { force: true });
    end = Date.now() + 30_000;
  }
  try {
    await prepareLocked(dir, logger);
  } finally {
    rmSync(lock, { force: true });
  }
}

async function prepareLocked(dir: string, logger: Logger): Promise<void> {
  const caFiles = { cert: path.join(dir, "ca.crt"), key: path.join(dir, "ca.key") };
  let ca: CertKey;
  if (existsSync(caFiles.cert)) {
    ca = { cert: readFileSync(caFiles.cert, "utf8"), key: existsSync(caFiles.key) ? readFileSync(caFiles.key, "utf8") : "" };
  } else {
    ca = await createCa();
    writeAtomic(caFiles.key, ca.key, 0o600);
    writeAtomic(caFiles.cert, ca.cert, 0o644);
    logger.warn(
      { dir },
      "generated an internal CA and service certificates into the data dir (production: mount your own and set TLS_CA_FILE, TLS_CERT_FILE, TLS_KEY_FILE)",
    );
  }
  const renewBefore = Date.now() + RENEW_DAYS * DAY;
  for (const name of INTERNAL_NAMES) {
    const files = tlsDirFiles(dir, name);
    if (existsSync(files.cert) && existsSync(files.key) && new Date(new X509Certificate(readFileSync(files.cert)).validTo).getTime() > renewBefore) continue;
    if (!ca.key) throw new Error(`${files.cert} is missing or about to expire, and ${caFiles.key} is not there to issue it`);
    const leaf = await issueCertificate(ca, name);
    writeAtomic(files.key, leaf.key, 0o600);
    writeAtomic(files.cert, leaf.cert, 0o644);
  }
}

/** The DNS names of a certificate's subjectAltName, else its CN. */
export function certificateNames(cert: { subjectaltname?: string; subject?: { CN?: string | string[] } }): string[] {
  const dns = (cert.subjectaltname ?? "")
    .split(", ")
    .filter((s) => s.startsWith("DNS:"))
    .map((s) => s.slice(4));
  if (dns.length) return dns;
  const cn = cert.subject?.CN;
  return cn === undefined ? [] : Array.isArray(cn) ? cn : [cn];
}

interface Loaded {
  options: tls.SecureContextOptions;
  context: tls.SecureContext;
  stamp: string;
}

/**
 * One service's TLS identity: its certificate and key and the CA it trusts, for its server and
 * its clients alike. The files are checked every `reloadMs` and taken again when they change
 * (rotation without restart); a broken new set is logged and the current one kept.
 */
export class TlsIdentity {
  private current: Loaded;
  /** The stamp of a set found unusable, so that it is reported once. */
  private refused = "";
  private timer?: NodeJS.Timeout;
  private readonly listeners = new Set<() => void>();

  private constructor(
    readonly name: string,
    private readonly files: TlsFiles,
    private readonly logger: Logger,
    loaded: Loaded,
  ) {
    this.current = loaded;
  }

  /** Loads the files; throws when they do not form a usable identity named `name`. */
  static async load(name: string, files: TlsFiles, logger: Logger, reloadMs = 5_000): Promise<TlsIdentity> {
    const id = new TlsIdentity(name, files, logger, await TlsIdentity.read(name, files));
    id.timer = setInterval(() => void id.reload(), reloadMs);
    id.timer.unref();
    return id;
  }

  private static async stamp(files: TlsFiles): Promise<string> {
    const s = await Promise.all([files.ca, files.cert, files.key].map((f) => stat(f)));
    return s.map((x) => `${x.ino}:${x.size}:${x.mtimeMs}`).join("|");
  }

  private static async read(name: string, files: TlsFiles): Promise<Loaded> {
    const stamp = await TlsIdentity.stamp(files);
    const [ca, cert, key] = [files.ca, files.cert, files.key].map((f) => readFileSync(f, "utf8"));
    const names = certificateNames(new X509Certificate(cert).toLegacyObject());
    if (!names.includes(name)) throw new Error(`${files.cert} names ${names.join(", ") || "nothing"}, not ${name}`);
    const options: tls.SecureContextOptions = { ca, cert, key, minVersion: "TLSv1.3" };
    // fails here, not at the first handshake, when the key does not belong to the certificate
    return { options, context: tls.createSecureContext(options), stamp };
  }

  /** Options for a server's (or setSecureContext's) TLS: CA, certificate, key, TLS 1.3 only. */
  get options(): tls.SecureContextOptions {
    return this.current.options;
  }

  /** The context for new client connections. */
  get secureContext(): tls.SecureContext {
    return this.current.context;
  }

  /** Calls `fn` after each reload that took a new set of files. */
  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Takes the files again if they changed since the last load; true when it did. */
  async reload(): Promise<boolean> {
    let now = "";
    try {
      now = await TlsIdentity.stamp(this.files);
      if (now === this.current.stamp || now === this.refused) return false;
      this.current = await TlsIdentity.read(this.name, this.files);
    } catch (e) {
      if (now === this.refused) return false;
      this.refused = now;
      this.logger.error({ err: (e as Error).message, cert: this.files.cert }, "tls: the changed certificate files are not usable; keeping the current ones");
      return false;
    }
    this.logger.info({ name: this.name, cert: this.files.cert }, "tls: certificate files reloaded");
    for (const fn of this.listeners) fn();
    return true;
  }

  /** Stops watching the files. */
  close(): void {
    clearInterval(this.timer);
  }
}

/**
 * The TLS identity of service `name`: the files TLS_CA_FILE, TLS_CERT_FILE and TLS_KEY_FILE when
 * set (one service per process, as in Kubernetes), else its files in TLS_DIR (default
 * <DATA_DIR>/tls), generated there on first start. The caller owns it and closes it.
 */
export async function serviceIdentity(config: Config, name: InternalName, logger: Logger): Promise<TlsIdentity> {
  let files: TlsFiles;
  if (config.TLS_CA_FILE && config.TLS_CERT_FILE && config.TLS_KEY_FILE) {
    files = { ca: config.TLS_CA_FILE, cert: config.TLS_CERT_FILE, key: config.TLS_KEY_FILE };
  } else {
    await ensureTlsDir(config.tlsDir, logger);
    files = tlsDirFiles(config.tlsDir, name);
  }
  return TlsIdentity.load(name, files, logger, config.TLS_RELOAD_INTERVAL_MS);
}

/** Node's codes for a peer certificate this process cannot accept, or a client certificate the peer refused. */
const CERTIFICATE_ERRORS = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_SIGNATURE_FAILURE",
  "ERR_TLS_CERT_ALTNAME_INVALID",
  "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA",
  "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE",
]);

/**
 * Why a call to a peer failed when the reason is this deployment's certificates (another CA, the
 * wrong service at the address), with what to set; undefined for anything else (a peer that is
 * not up yet, a timeout). Reads the error's cause chain (ConnectError → Node's socket error).
 */
export function certificateProblem(err: unknown, config: Config): string | undefined {
  for (let e = err as { code?: unknown; message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (typeof e.code !== "string" || !CERTIFICATE_ERRORS.has(e.code)) continue;
    if (e.code === "ERR_TLS_CERT_ALTNAME_INVALID") return `another service answers at that address (${e.message})`;
    const fix = config.TLS_CA_FILE ? `a TLS_CA_FILE (here ${config.TLS_CA_FILE}) naming the CA of them all` : `the same TLS_DIR (here ${config.tlsDir})`;
    return `its certificate is not of this process's CA (${e.message}): every process of a split deployment needs ${fix}`;
  }
  return undefined;
}
