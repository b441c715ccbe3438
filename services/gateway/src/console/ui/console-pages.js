// The console's overview (counts and Chart.js charts), a project's branding with its live preview,
// and the profiles pages. A classic script loaded before console-app.js: it hands that module
// globalThis.ICVConsolePages(ui), which makes the pages from the module's helpers (h, call, show…).
// Chart.js is the kept chart library (globalThis.Chart, served from /console/assets/ like every file).
globalThis.ICVConsolePages = ({ h, call, show, failure, link, when, state }) => {
  const STATUSES = ["pending", "verified", "suspended", "failed", "expired", "revoked"];
  const COLORS = { pending: "#8c959f", verified: "#1a7f37", suspended: "#9a6700", failed: "#b42318", expired: "#57606a", revoked: "#6639ba" };
  const PERIODS = [
    ["24h", "Last 24 hours"],
    ["30d", "Last 30 days"],
  ];
  const charts = [];

  /** A stacked bar chart of one period's buckets by status, with a text alternative (the tables hold the numbers). */
  function chartOf(stats, label) {
    const canvas = h("canvas", { role: "img", "aria-label": `${label}: ${stats.total} verifications by status, per ${stats.bucket}` });
    const labels = stats.buckets.map((b) =>
      stats.bucket === "hour"
        ? new Date(b.start).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
        : new Date(b.start).toLocaleDateString([], { month: "short", day: "numeric" }),
    );
    if (globalThis.Chart) {
      charts.push(
        new globalThis.Chart(canvas, {
          type: "bar",
          data: {
            labels,
            datasets: STATUSES.map((s) => ({ label: s, data: stats.buckets.map((b) => b.by_status[s] ?? 0), backgroundColor: COLORS[s] })),
          },
          options: {
            animation: false,
            responsive: true,
            maintainAspectRatio: false,
            scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
            plugins: { legend: { position: "bottom" } },
          },
        }),
      );
    }
    return h(
      "figure",
      { class: "chart", "data-chart": stats.period },
      h("div", { class: "chart-box" }, canvas),
      h("figcaption", {}, `${label}, per ${stats.bucket}`),
    );
  }

  const rateText = (r) => (r === null ? "—" : `${r.toFixed(1)} %`);
  const table = (head, rows) =>
    h(
      "table",
      {},
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          head.map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      h("tbody", {}, rows),
    );

  /** Counts by status and channel, success rate, and the charts over 24 h and 30 days: grouped by the verification service. */
  async function overviewPage(env) {
    for (const c of charts.splice(0)) c.destroy();
    try {
      const [day, month] = await Promise.all(PERIODS.map(([p]) => call("GET", `/${env}/stats/verifications?period=${p}`)));
      const stats = await call("GET", `/${env}/webhook-deliveries/stats`).catch(() => undefined);
      const periods = [day, month];
      const channels = [...new Set(periods.flatMap((p) => Object.keys(p.by_channel)))].sort();
      show(
        `Overview (${env})`,
        table(
          ["Verifications", ...STATUSES, "Success rate"],
          periods.map((p, i) =>
            h(
              "tr",
              {},
              h("th", { scope: "row" }, PERIODS[i][1]),
              STATUSES.map((s) => h("td", {}, p.by_status[s] ?? 0)),
              h("td", { "data-rate": PERIODS[i][1] }, rateText(p.success_rate)),
            ),
          ),
        ),
        h(
          "p",
          {},
          "Success rate: verifications that showed control (verified, suspended or revoked since) out of those that finished (those and failed or expired).",
        ),
        h("div", { class: "charts" }, chartOf(day, PERIODS[0][1]), chartOf(month, PERIODS[1][1])),
        h("h2", {}, "By channel"),
        channels.length
          ? table(
              ["Channel", "24 h", "30 days"],
              channels.map((c) =>
                h(
                  "tr",
                  {},
                  h("th", { scope: "row" }, c),
                  periods.map((p) => h("td", {}, p.by_channel[c] ?? 0)),
                ),
              ),
            )
          : h("p", {}, "No verifications in the last 30 days."),
        stats
          ? h(
              "p",
              {},
              `Webhook deliveries: ${stats.delivered} delivered, ${stats.failed} failed, ${stats.pending} pending (${stats.success_rate} % delivered).`,
            )
          : undefined,
      );
    } catch (e) {
      show("Overview", failure(e));
    }
  }

  /** A project's branding: the form, and a preview of the hosted page's header that follows every keystroke. */
  async function brandingPage(env, projectId) {
    const base = `/${env}/projects/${encodeURIComponent(projectId)}`;
    const canChange = state.me.user.role !== "viewer";
    const out = h("div", { "aria-live": "polite" });
    try {
      const p = await call("GET", base);
      const field = (name, label, attrs = {}) => h("input", { name, "aria-label": label, value: p.branding[name] ?? "", disabled: !canChange, ...attrs });
      const inputs = {
        business_name: field("business_name", "Business name", { maxlength: 100 }),
        logo_url: field("logo_url", "Logo URL", { type: "url", maxlength: 2048, placeholder: "https://…" }),
        primary_color: field("primary_color", "Primary colour", { maxlength: 7, placeholder: "#0a58ca" }),
        support_email: field("support_email", "Support email", { type: "email", maxlength: 254 }),
      };
      const name = h("strong", { "data-preview": "name" });
      const support = h("small", { "data-preview": "support" });
      const button = h("span", { class: "preview-button", "data-preview": "button" }, "Verify");
      const logo = p.branding.logo_url ? h("img", { src: `/hosted/logo/${p.id}`, alt: "", class: "preview-logo" }) : undefined;
      const preview = h(
        "div",
        { class: "branding-preview", role: "group", "aria-label": "Preview of the hosted page" },
        logo,
        name,
        h("p", {}, "Confirm your email address to continue."),
        button,
        support,
      );
      const paint = () => {
        name.textContent = inputs.business_name.value || p.name;
        support.textContent = inputs.support_email.value ? `Help: ${inputs.support_email.value}` : "";
        const color = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.test(inputs.primary_color.value) ? inputs.primary_color.value : "#0a58ca";
        // CSSOM, not a style attribute: the strict CSP allows it
        button.style.backgroundColor = color;
        preview.style.borderTopColor = color;
      };
      for (const i of Object.values(inputs)) i.addEventListener("input", paint);
      paint();
      show(
        `Branding of ${p.name}`,
        h(
          "form",
          {
            class: "stack",
            onsubmit: async (e) => {
              e.preventDefault();
              try {
                const branding = Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value.trim() || null]));
                await call("PATCH", base, { branding });
                out.replaceChildren(h("p", { role: "status" }, "Saved."));
              } catch (err) {
                out.replaceChildren(failure(err));
              }
            },
          },
          Object.entries(inputs).map(([, i]) => h("label", {}, i.getAttribute("aria-label"), i)),
          canChange ? h("button", { type: "submit" }, "Save branding") : undefined,
        ),
        out,
        h("h2", {}, "Preview"),
        preview,
        h("p", {}, link(`/console/${env}/projects/${p.id}`, "Message templates"), " · ", link(`/console/${env}/projects`, "← All projects")),
      );
    } catch (e) {
      show("Branding", failure(e), link(`/console/${env}/projects`, "← All projects"));
    }
  }

  /** The public profiles of the tenant's users: a page at a time, each with its proofs. */
  async function profilesPage(env) {
    const q = new URLSearchParams(location.search);
    try {
      const r = await call("GET", `/${env}/profiles?limit=20&page=${Number(q.get("page") ?? 1) || 1}`);
      show(
        `Profiles (${env})`,
        r.data.length
          ? table(
              ["Name", "Public", "Proofs", "Updated"],
              r.data.map((p) =>
                h(
                  "tr",
                  {},
                  h("td", {}, link(`/console/${env}/profiles/${p.id}`, p.display_name)),
                  h("td", {}, p.is_public ? "yes" : "no"),
                  h("td", {}, p.proofs.length),
                  h("td", {}, when(p.updated_at ?? p.created_at)),
                ),
              ),
            )
          : h("p", {}, "No profiles yet."),
      );
    } catch (e) {
      show("Profiles", failure(e));
    }
  }

  async function profilePage(env, id) {
    try {
      const p = await call("GET", `/${env}/profiles/${encodeURIComponent(id)}`);
      show(
        `Profile ${p.display_name}`,
        h(
          "dl",
          {},
          [
            ["Id", p.id],
            ["Public", p.is_public ? "yes" : "no"],
            ["Bio", p.bio ?? "—"],
          ].flatMap(([k, x]) => [h("dt", {}, k), h("dd", { "data-field": k }, x)]),
        ),
        h("h2", {}, "Proofs shown"),
        table(
          ["Verification", "Label", "Identifier shown"],
          p.proofs.map((x) =>
            h(
              "tr",
              {},
              h("td", {}, link(`/console/${env}/verifications/${x.verification_id}`, x.verification_id)),
              h("td", {}, x.label || "—"),
              h("td", {}, x.mask_level),
            ),
          ),
        ),
        p.is_public ? h("p", {}, h("a", { href: p.public_url, rel: "noreferrer", target: "_blank" }, "Open the public page")) : undefined,
        link(`/console/${env}/profiles`, "← All profiles"),
      );
    } catch (e) {
      show("Profile", failure(e), link(`/console/${env}/profiles`, "← All profiles"));
    }
  }

  return { overviewPage, brandingPage, profilesPage, profilePage };
};
