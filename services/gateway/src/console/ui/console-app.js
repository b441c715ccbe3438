// The tenant console in the browser: a small client of /console/api/ (no framework, no inline
// script; every value is put in the page as text, never as HTML). Served as /console/assets/console.<hash>.js.
const { startRegistration, startAuthentication } = globalThis.SimpleWebAuthnBrowser;

const state = { me: undefined, csrf: "" };
/** The sections the live/test switch keeps (others go to the verifications). */
const ENV_SECTIONS = ["keys", "webhook", "deliveries", "overview", "requests", "projects", "profiles"];
const main = document.getElementById("main");
const top = document.getElementById("top");

/** An element: h("a", { href }, "text", child…); attributes starting with "on" are listeners. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) el.append(c instanceof Node ? c : String(c));
  return el;
}

async function call(method, path, body) {
  const res = await fetch(`/console/api${path}`, {
    method,
    credentials: "same-origin",
    headers: {
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...(method !== "GET" && state.csrf ? { "x-csrf-token": state.csrf } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = res.status === 204 ? undefined : await res.json().catch(() => undefined);
  if (!res.ok) throw Object.assign(new Error(data?.error?.message ?? `HTTP ${res.status}`), { status: res.status, code: data?.error?.code });
  return data;
}

const go = (path) => {
  history.pushState(null, "", path);
  route();
};
const link = (path, text, current) =>
  h(
    "a",
    {
      href: path,
      "aria-current": current ? "page" : undefined,
      onclick: (e) => {
        e.preventDefault();
        go(path);
      },
    },
    text,
  );

function show(title, ...content) {
  document.title = `${title} · ICV console`;
  main.replaceChildren(h("h1", {}, title), ...content);
  main.focus();
}
const failure = (e) => h("p", { class: "error", role: "alert" }, e.message);

function header(env, section) {
  if (!state.me) return top.replaceChildren(h("span", { class: "brand" }, "ICV console"));
  const isAdmin = state.me.user.role === "admin";
  const sw = h(
    "span",
    { class: `env ${env}`, role: "group", "aria-label": "Environment" },
    ["test", "live"].map((e) =>
      h(
        "a",
        {
          href: `/console/${e}/${ENV_SECTIONS.includes(section) ? section : "verifications"}`,
          "aria-current": e === env ? "true" : undefined,
          onclick: (ev) => {
            ev.preventDefault();
            go(`/console/${e}/${ENV_SECTIONS.includes(section) ? section : "verifications"}`);
          },
        },
        e === "test" ? "Test" : "Live",
      ),
    ),
  );
  top.replaceChildren(
    h("span", { class: "brand" }, "ICV console · ", state.me.tenant.name ?? state.me.tenant.id),
    sw,
    h(
      "nav",
      { "aria-label": "Console" },
      link(`/console/${env}/overview`, "Overview", section === "overview"),
      link(`/console/${env}/verifications`, "Verifications", section === "verifications"),
      link(`/console/${env}/requests`, "Requests", section === "requests"),
      env === "test" ? link("/console/test/messages", "Test messages", section === "messages") : undefined,
      link(`/console/${env}/projects`, "Projects", section === "projects"),
      link(`/console/${env}/profiles`, "Profiles", section === "profiles"),
      link(`/console/${env}/webhook`, "Webhook", section === "webhook"),
      link(`/console/${env}/deliveries`, "Deliveries", section === "deliveries"),
      isAdmin ? link(`/console/${env}/keys`, "API keys", section === "keys") : undefined,
      isAdmin ? link("/console/users", "Users", section === "users") : undefined,
      link("/console/audit", "Audit log", section === "audit"),
    ),
    h("span", {}, state.me.user.email, " (", state.me.user.role, ")"),
    h("button", { class: "plain", type: "button", onclick: signOut }, "Sign out"),
  );
}

async function signOut() {
  await call("POST", "/sign-out").catch(() => undefined);
  state.me = undefined;
  state.csrf = "";
  go("/console/sign-in");
}

function invitePage() {
  header();
  const token = location.hash.slice(1);
  const out = h("div", { "aria-live": "polite" });
  show(
    "Register your passkey",
    h("p", {}, "This single-use invite registers a passkey on this device for the ICV console."),
    h(
      "button",
      {
        type: "button",
        onclick: async () => {
          try {
            const o = await call("POST", "/invite/options", { token });
            const response = await startRegistration({ optionsJSON: o.options });
            const r = await call("POST", "/invite/accept", { token, response });
            state.csrf = r.csrf_token;
            history.replaceState(null, "", "/console");
            await loadMe();
            go("/console/test/verifications");
          } catch (e) {
            out.replaceChildren(failure(e));
          }
        },
      },
      "Register a passkey",
    ),
    out,
  );
}

function signInPage() {
  header();
  const out = h("div", { "aria-live": "polite" });
  show(
    "Sign in",
    h(
      "button",
      {
        type: "button",
        onclick: async () => {
          try {
            const o = await call("POST", "/sign-in/options");
            const response = await startAuthentication({ optionsJSON: o.options });
            const r = await call("POST", "/sign-in", { response });
            state.csrf = r.csrf_token;
            await loadMe();
            go("/console/test/verifications");
          } catch (e) {
            out.replaceChildren(failure(e));
          }
        },
      },
      "Sign in with a passkey",
    ),
    out,
  );
}

const when = (t) => (t ? new Date(t).toLocaleString() : "—");
const pager = (p, base) =>
  h(
    "div",
    { class: "pager" },
    p.page > 1 ? link(`${base}${base.includes("?") ? "&" : "?"}page=${p.page - 1}`, "← Newer") : undefined,
    h("span", {}, `Page ${p.page} of ${Math.max(p.pages, 1)} (${p.total})`),
    p.hasMore ? link(`${base}${base.includes("?") ? "&" : "?"}page=${p.page + 1}`, "Older →") : undefined,
  );

async function verificationsPage(env) {
  const q = new URLSearchParams(location.search);
  const params = new URLSearchParams({ limit: "20", page: q.get("page") ?? "1" });
  for (const k of ["status", "external_user_id"]) if (q.get(k)) params.set(k, q.get(k));
  const search = h("input", { name: "id", placeholder: "ver_…", "aria-label": "Verification id" });
  const user = h("input", { name: "external_user_id", value: q.get("external_user_id") ?? "", "aria-label": "External user id" });
  const status = h(
    "select",
    { name: "status", "aria-label": "Status" },
    ["", "pending", "verified", "failed", "expired", "revoked"].map((s) =>
      h("option", { value: s, selected: s === (q.get("status") ?? "") }, s || "any status"),
    ),
  );
  const bar = h(
    "form",
    {
      class: "bar",
      role: "search",
      onsubmit: (e) => {
        e.preventDefault();
        if (search.value.trim()) return go(`/console/${env}/verifications/${encodeURIComponent(search.value.trim())}`);
        const f = new URLSearchParams();
        if (status.value) f.set("status", status.value);
        if (user.value.trim()) f.set("external_user_id", user.value.trim());
        go(`/console/${env}/verifications${f.size ? `?${f}` : ""}`);
      },
    },
    h("label", {}, "Id", search),
    h("label", {}, "External user id", user),
    h("label", {}, "Status", status),
    h("button", { type: "submit" }, "Search"),
  );
  const find = identifierSearch(env);
  try {
    const r = await call("GET", `/${env}/verifications?${params}`);
    const rows = r.data.map((v) =>
      h(
        "tr",
        {},
        h("td", {}, link(`/console/${env}/verifications/${v.id}`, v.id)),
        h("td", {}, v.type, " / ", v.channel),
        h("td", { class: `status-${v.status}` }, v.status),
        h("td", { class: "wide" }, v.external_user_id ?? ""),
        h("td", {}, when(v.created_at)),
      ),
    );
    show(
      "Verifications",
      bar,
      find,
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Id", "Type / channel", "Status", "External user", "Created"].map((t, i) => h("th", { scope: "col", class: i === 3 ? "wide" : undefined }, t)),
          ),
        ),
        h("tbody", {}, rows),
      ),
      rows.length ? pager(r.pagination, `/console/${env}/verifications${location.search.replace(/[?&]page=\d+/, "")}`) : h("p", {}, "No verifications."),
    );
  } catch (e) {
    show("Verifications", bar, find, failure(e));
  }
}

/**
 * Find by identifier: typed in full, sent in a POST body (never in the page's URL), answered by the
 * verification service with the identifiers masked.
 */
function identifierSearch(env) {
  const identifier = h("input", { name: "identifier", autocomplete: "off", "aria-label": "Identifier", placeholder: "jo@example.com, +370…" });
  const type = h(
    "select",
    { name: "type", "aria-label": "Type" },
    ["", "email", "phone", "domain", "wallet", "social", "account", "telegram_bot"].map((t) => h("option", { value: t }, t || "any type")),
  );
  const found = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    {
      class: "bar",
      role: "search",
      "aria-label": "Find by identifier",
      onsubmit: async (e) => {
        e.preventDefault();
        try {
          const r = await call("POST", `/${env}/search/verifications`, {
            identifier: identifier.value.trim(),
            ...(type.value ? { type: type.value } : {}),
            limit: 50,
          });
          found.replaceChildren(
            h("h2", {}, `Found ${r.pagination.total} by identifier`),
            r.data.length
              ? h(
                  "table",
                  { "data-found": "" },
                  h(
                    "thead",
                    {},
                    h(
                      "tr",
                      {},
                      ["Id", "Type / channel", "Status", "Identifier", "Created"].map((t) => h("th", { scope: "col" }, t)),
                    ),
                  ),
                  h(
                    "tbody",
                    {},
                    r.data.map((v) =>
                      h(
                        "tr",
                        {},
                        h("td", {}, link(`/console/${env}/verifications/${v.id}`, v.id)),
                        h("td", {}, v.type, " / ", v.channel),
                        h("td", { class: `status-${v.status}` }, v.status),
                        h("td", {}, v.masked_identifier),
                        h("td", {}, when(v.created_at)),
                      ),
                    ),
                  ),
                )
              : h("p", {}, "No verification of this identifier."),
          );
        } catch (err) {
          found.replaceChildren(failure(err));
        }
      },
    },
    h("label", {}, "Identifier", identifier),
    h("label", {}, "Type", type),
    h("button", { type: "submit" }, "Find"),
  );
  return h("div", {}, form, found);
}

async function verificationPage(env, id) {
  try {
    const v = await call("GET", `/${env}/verifications/${encodeURIComponent(id)}`);
    const timeline = await call("GET", `/${env}/verifications/${encodeURIComponent(id)}/timeline`).catch(() => ({ data: [] }));
    const out = h("div", { "aria-live": "polite" });
    const reason = h(
      "select",
      { "aria-label": "Reason" },
      ["user_request", "fraud", "key_compromise", "asset_transferred", "other"].map((x) => h("option", { value: x }, x)),
    );
    const canRevoke = v.status === "verified" && state.me.user.role !== "viewer";
    const checked = h("div", { "aria-live": "polite" });
    const against = h("input", { autocomplete: "off", "aria-label": "Identifier to compare (optional)" });
    const validate = v.proof?.token
      ? h(
          "form",
          {
            class: "bar",
            onsubmit: async (e) => {
              e.preventDefault();
              try {
                const r = await call("POST", `/${env}/proofs/validate`, {
                  proof_token: v.proof.token,
                  ...(against.value.trim() ? { identifier: against.value.trim() } : {}),
                });
                checked.replaceChildren(
                  h(
                    "p",
                    { role: "status", "data-validation": r.valid ? "valid" : "invalid" },
                    r.valid
                      ? `Valid proof (${r.verification.type}, expires ${when(r.verification.expires_at)})`
                      : `Not valid: ${r.reason}${r.message ? ` (${r.message})` : ""}`,
                  ),
                );
              } catch (err) {
                checked.replaceChildren(failure(err));
              }
            },
          },
          h("label", {}, "Identifier to compare (optional)", against),
          h("button", { type: "submit", class: "plain" }, "Validate proof"),
        )
      : undefined;
    show(
      `Verification ${v.id}`,
      h(
        "dl",
        {},
        [
          ["Status", v.status],
          ["Type / channel", `${v.type} / ${v.channel}`],
          ["Identifier", v.identifier ?? v.masked_identifier ?? "—"],
          ["External user", v.external_user_id ?? "—"],
          ["Created", when(v.created_at)],
          ["Verified", when(v.verified_at)],
          ["Revoked", v.revoked_at ? `${when(v.revoked_at)} (${v.revoked_reason})` : "—"],
          ["Proof expires", when(v.proof?.expires_at ?? v.proof_expires_at)],
        ].flatMap(([k, x]) => [h("dt", {}, k), h("dd", { "data-field": k }, x)]),
      ),
      canRevoke
        ? h(
            "form",
            {
              class: "bar",
              onsubmit: async (e) => {
                e.preventDefault();
                try {
                  await call("POST", `/${env}/proofs/${v.id}/revoke`, { reason: reason.value });
                  await verificationPage(env, id);
                } catch (err) {
                  out.replaceChildren(failure(err));
                }
              },
            },
            h("label", {}, "Reason", reason),
            h("button", { type: "submit", class: "danger" }, "Revoke proof"),
          )
        : undefined,
      out,
      validate,
      checked,
      h("h2", {}, "Timeline"),
      h(
        "ol",
        { class: "timeline" },
        timeline.data.map((e) =>
          h(
            "li",
            {},
            h("time", { datetime: e.at }, when(e.at)),
            " ",
            e.previous_status ? `${e.previous_status} → ` : "",
            e.status ?? "",
            ` (${e.event_type}${e.reason ? `: ${e.reason}` : ""})`,
          ),
        ),
      ),
      link(`/console/${env}/verifications`, "← All verifications"),
    );
  } catch (e) {
    show("Verification", failure(e), link(`/console/${env}/verifications`, "← All verifications"));
  }
}

async function keysPage(env) {
  const once = h("div", { "aria-live": "polite" });
  const render = async () => {
    const r = await call("GET", `/${env}/keys?limit=50`);
    show(
      `API keys (${env})`,
      h(
        "button",
        {
          type: "button",
          onclick: async () => {
            try {
              const k = await call("POST", `/${env}/keys`);
              await render();
              once.replaceChildren(h("div", { class: "once" }, h("p", {}, "Your new key, shown only now:"), h("code", { "data-key": "" }, k.key)));
            } catch (e) {
              once.replaceChildren(failure(e));
            }
          },
        },
        "Create a key",
      ),
      once,
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Prefix", "Id", "Created", "Last used", "Revoked", ""].map((t) => h("th", { scope: "col" }, t)),
          ),
        ),
        h(
          "tbody",
          {},
          r.data.map((k) =>
            h(
              "tr",
              {},
              h("td", {}, h("code", {}, `${k.prefix}…`)),
              h("td", {}, k.id),
              h("td", {}, when(k.created_at)),
              h("td", {}, when(k.last_used_at)),
              h("td", {}, when(k.revoked_at)),
              h(
                "td",
                {},
                k.revoked_at
                  ? ""
                  : h(
                      "button",
                      {
                        type: "button",
                        class: "danger",
                        "aria-label": `Revoke ${k.prefix}`,
                        onclick: async () => {
                          try {
                            await call("POST", `/${env}/keys/${k.id}/revoke`);
                            await render();
                          } catch (e) {
                            once.replaceChildren(failure(e));
                          }
                        },
                      },
                      "Revoke",
                    ),
              ),
            ),
          ),
        ),
      ),
    );
  };
  await render().catch((e) => show("API keys", failure(e)));
}

async function usersPage() {
  const once = h("div", { "aria-live": "polite" });
  const email = h("input", { type: "email", required: true, "aria-label": "Email" });
  const role = h(
    "select",
    { "aria-label": "Role" },
    ["viewer", "developer", "admin"].map((x) => h("option", { value: x }, x)),
  );
  const render = async () => {
    const r = await call("GET", "/users?limit=100");
    show(
      "Users",
      h(
        "form",
        {
          class: "bar",
          onsubmit: async (e) => {
            e.preventDefault();
            try {
              const i = await call("POST", "/users", { email: email.value, role: role.value });
              await render();
              once.replaceChildren(
                h("div", { class: "once" }, h("p", {}, `Invite link for ${i.user.email}, single use, shown only now:`), h("code", {}, i.invite_url)),
              );
            } catch (err) {
              once.replaceChildren(failure(err));
            }
          },
        },
        h("label", {}, "Email", email),
        h("label", {}, "Role", role),
        h("button", { type: "submit" }, "Invite"),
      ),
      once,
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Email", "Role", "Since", ""].map((t) => h("th", { scope: "col" }, t)),
          ),
        ),
        h(
          "tbody",
          {},
          r.data.map((u) =>
            h(
              "tr",
              {},
              h("td", {}, u.email),
              h("td", {}, u.role),
              h("td", {}, when(u.created_at)),
              h(
                "td",
                {},
                u.revoked_at
                  ? `revoked ${when(u.revoked_at)}`
                  : u.id === state.me.user.id
                    ? "you"
                    : h(
                        "button",
                        {
                          type: "button",
                          class: "danger",
                          "aria-label": `Revoke ${u.email}`,
                          onclick: async () => {
                            await call("POST", `/users/${u.id}/revoke`).catch((e) => once.replaceChildren(failure(e)));
                            await render();
                          },
                        },
                        "Revoke",
                      ),
              ),
            ),
          ),
        ),
      ),
    );
  };
  await render().catch((e) => show("Users", failure(e)));
}

async function auditPage() {
  const q = new URLSearchParams(location.search);
  try {
    const r = await call("GET", `/audit?limit=50&page=${Number(q.get("page") ?? 1) || 1}`);
    show(
      "Audit log",
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["When", "Who", "What", "Outcome", "From"].map((t) => h("th", { scope: "col" }, t)),
          ),
        ),
        h(
          "tbody",
          {},
          r.data.map((a) =>
            h(
              "tr",
              {},
              h("td", {}, when(a.at)),
              h("td", {}, a.email ?? "—"),
              h("td", {}, a.action, a.environment ? ` (${a.environment})` : "", a.target ? ` ${a.target}` : ""),
              h("td", {}, a.outcome),
              h("td", {}, a.ip ?? ""),
            ),
          ),
        ),
      ),
      pager(r.pagination, "/console/audit"),
    );
  } catch (e) {
    show("Audit log", failure(e));
  }
}

async function webhookPage(env) {
  const out = h("div", { "aria-live": "polite" });
  const canChange = state.me.user.role !== "viewer";
  const render = async (note) => {
    const w = await call("GET", `/${env}/webhook`);
    const url = h("input", { type: "url", value: w.url ?? "", "aria-label": "Endpoint URL", size: 40, required: true });
    const act = (fn) => async (e) => {
      e?.preventDefault();
      try {
        await fn();
      } catch (err) {
        out.replaceChildren(failure(err));
      }
    };
    show(
      `Webhook endpoint (${env})`,
      h(
        "dl",
        {},
        [
          ["URL", w.url ?? "not set"],
          ["Secret made", when(w.secret_created_at)],
          ["Previous secret signs until", when(w.previous_secret_expires_at)],
          ["Failing since", when(w.failing_since)],
          ["Disabled", w.disabled_at ? `${when(w.disabled_at)} (${w.disabled_reason ?? ""})` : "—"],
        ].flatMap(([k, x]) => [h("dt", {}, k), h("dd", { "data-field": k }, x)]),
      ),
      canChange
        ? h(
            "form",
            { class: "bar", onsubmit: act(async () => render(await call("PUT", `/${env}/webhook`, { url: url.value }).then(() => "Saved."))) },
            h("label", {}, "Endpoint URL", url),
            h("button", { type: "submit" }, "Save"),
          )
        : undefined,
      canChange && w.url
        ? h(
            "button",
            {
              type: "button",
              class: "plain",
              onclick: act(async () => {
                const r = await call("POST", `/${env}/webhook/test`);
                out.replaceChildren(h("p", { role: "status" }, `Test event sent: delivery ${r.delivery_id} (see Deliveries).`));
              }),
            },
            "Send a test event",
          )
        : undefined,
      canChange && w.disabled_at
        ? h("button", { type: "button", onclick: act(async () => render(await call("POST", `/${env}/webhook/enable`).then(() => "Enabled."))) }, "Enable")
        : undefined,
      canChange
        ? h(
            "button",
            {
              type: "button",
              class: "plain",
              onclick: act(async () => {
                const r = await call("POST", `/${env}/webhook/rotate-secret`);
                await render();
                out.replaceChildren(
                  h(
                    "div",
                    { class: "once" },
                    h("p", {}, "The new signing secret, shown only now (the previous one signs alongside it for 24 h):"),
                    h("code", { "data-secret": "" }, r.secret),
                  ),
                );
              }),
            },
            "Rotate the secret",
          )
        : undefined,
      note ? h("p", { role: "status" }, note) : undefined,
      out,
    );
  };
  await render().catch((e) => show("Webhook endpoint", failure(e)));
}

async function deliveriesPage(env) {
  const q = new URLSearchParams(location.search);
  const params = new URLSearchParams({ limit: "20", page: q.get("page") ?? "1" });
  if (q.get("status")) params.set("status", q.get("status"));
  const out = h("div", { "aria-live": "polite" });
  const status = h(
    "select",
    { name: "status", "aria-label": "Status" },
    ["", "pending", "delivered", "failed"].map((s) => h("option", { value: s, selected: s === (q.get("status") ?? "") }, s || "any status")),
  );
  const bar = h(
    "form",
    {
      class: "bar",
      onsubmit: (e) => {
        e.preventDefault();
        go(`/console/${env}/deliveries${status.value ? `?status=${status.value}` : ""}`);
      },
    },
    h("label", {}, "Status", status),
    h("button", { type: "submit" }, "Filter"),
  );
  try {
    const r = await call("GET", `/${env}/webhook-deliveries?${params}`);
    const canRetry = state.me.user.role !== "viewer";
    show(
      "Webhook deliveries",
      bar,
      out,
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Event", "Status", "Attempts", "Response", "Created", ""].map((t) => h("th", { scope: "col" }, t)),
          ),
        ),
        h(
          "tbody",
          {},
          r.data.map((d) =>
            h(
              "tr",
              {},
              h("td", {}, d.event_type, h("br"), h("small", {}, d.id)),
              h("td", { class: `status-${d.status}` }, d.status),
              h("td", {}, `${d.attempts}/${d.max_attempts}`),
              h("td", {}, d.response_status ?? "—"),
              h("td", {}, when(d.created_at)),
              h(
                "td",
                {},
                canRetry && d.status === "failed"
                  ? h(
                      "button",
                      {
                        type: "button",
                        "aria-label": `Retry ${d.id}`,
                        onclick: async () => {
                          try {
                            await call("POST", `/${env}/webhook-deliveries/${d.id}/retry`);
                            await deliveriesPage(env);
                          } catch (e) {
                            out.replaceChildren(failure(e));
                          }
                        },
                      },
                      "Retry",
                    )
                  : "",
              ),
            ),
          ),
        ),
      ),
      r.data.length ? pager(r.pagination, `/console/${env}/deliveries${location.search.replace(/[?&]page=\d+/, "")}`) : h("p", {}, "No deliveries."),
    );
  } catch (e) {
    show("Webhook deliveries", bar, failure(e));
  }
}

/** A plain server-paged list of one offered route: its columns are [heading, (row) => cell]. */
async function listPage(title, env, path, section, columns, ...before) {
  const q = new URLSearchParams(location.search);
  try {
    const r = await call("GET", `/${env}/${path}?limit=20&page=${Number(q.get("page") ?? 1) || 1}`);
    show(
      title,
      ...before,
      h(
        "table",
        {},
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            columns.map(([t]) => h("th", { scope: "col" }, t)),
          ),
        ),
        h(
          "tbody",
          {},
          r.data.map((row) =>
            h(
              "tr",
              {},
              columns.map(([, cell]) => h("td", {}, cell(row))),
            ),
          ),
        ),
      ),
      r.data.length ? pager(r.pagination, `/console/${env}/${section}`) : h("p", {}, "Nothing yet."),
    );
  } catch (e) {
    show(title, ...before, failure(e));
  }
}

const requestsPage = (env) =>
  listPage("Verification requests", env, "verification-requests", "requests", [
    ["Id", (r) => r.id],
    ["Status", (r) => r.status],
    ["Reference", (r) => r.reference_id ?? "—"],
    ["Assets", (r) => r.assets.map((a) => `${a.type}: ${a.status}`).join(", ")],
    ["Created", (r) => when(r.created_at)],
    [
      "Hosted page",
      (r) => (r.status === "pending" || r.status === "partial" ? h("a", { href: r.verification_url, rel: "noreferrer", target: "_blank" }, "open") : "—"),
    ],
  ]);

const messagesPage = (env) =>
  listPage(`Test messages (${env})`, env, "test/messages", "messages", [
    ["When", (m) => when(m.created_at)],
    ["Channel", (m) => `${m.channel} (${m.direction})`],
    ["To", (m) => m.to],
    ["Message", (m) => [m.subject ? h("strong", {}, m.subject, h("br")) : undefined, m.text]],
    ["Verification", (m) => (m.verification_id ? link(`/console/${env}/verifications/${m.verification_id}`, m.verification_id) : (m.session_id ?? "—"))],
  ]);

/** The environment's projects: each one's templates and branding; a developer or admin adds one. */
function projectsPage(env) {
  const name = h("input", { "aria-label": "Project name", required: true, maxlength: 100 });
  const out = h("div", { "aria-live": "polite" });
  const add =
    state.me.user.role === "viewer"
      ? undefined
      : h(
          "form",
          {
            class: "bar",
            onsubmit: async (e) => {
              e.preventDefault();
              try {
                const p = await call("POST", `/${env}/projects`, { name: name.value.trim() });
                go(`/console/${env}/projects/${p.id}/branding`);
              } catch (err) {
                out.replaceChildren(failure(err));
              }
            },
          },
          h("label", {}, "Project name", name),
          h("button", { type: "submit" }, "Add a project"),
        );
  return listPage(
    `Projects (${env})`,
    env,
    "projects",
    "projects",
    [
      ["Name", (p) => link(`/console/${env}/projects/${p.id}`, p.name)],
      ["Branding", (p) => link(`/console/${env}/projects/${p.id}/branding`, "Branding")],
      ["Id", (p) => p.id],
      ["Created", (p) => when(p.created_at)],
    ],
    add,
    out,
  );
}

/** One project's message templates: pick a channel and type, edit, preview with sample values, save. */
async function templatesPage(env, projectId) {
  const channel = h(
    "select",
    { "aria-label": "Channel" },
    ["email", "sms", "whatsapp", "telegram"].map((x) => h("option", { value: x }, x)),
  );
  const type = h(
    "select",
    { "aria-label": "Message" },
    ["verification_request", "verification_success", "verification_expired", "login_request", "login_success", "2fa_request", "2fa_success"].map((x) =>
      h("option", { value: x }, x),
    ),
  );
  const subject = h("input", { "aria-label": "Subject", size: 50 });
  const body = h("textarea", { "aria-label": "Template text", rows: 6, cols: 60 });
  const preview = h("div", { "aria-live": "polite", class: "preview" });
  const out = h("div", { "aria-live": "polite" });
  const canChange = state.me.user.role !== "viewer";
  const base = `/${env}/projects/${encodeURIComponent(projectId)}/templates`;
  const load = async () => {
    try {
      const t = await call("GET", `${base}/${channel.value}/${type.value}`);
      body.value = t.body;
      subject.value = t.subject ?? "";
      subject.disabled = channel.value !== "email";
      out.replaceChildren(h("p", {}, t.custom === false ? "The built-in text (no template of this project yet)." : "This project's template."));
      preview.replaceChildren();
    } catch (e) {
      out.replaceChildren(failure(e));
    }
  };
  const withSubject = () => (channel.value === "email" && subject.value ? { subject: subject.value } : {});
  channel.addEventListener("change", load);
  type.addEventListener("change", load);
  show(
    "Message templates",
    h("form", { class: "bar", onsubmit: (e) => e.preventDefault() }, h("label", {}, "Channel", channel), h("label", {}, "Message", type)),
    h("p", {}, h("label", {}, "Subject (email)", subject)),
    h("p", {}, h("label", {}, "Text", body)),
    h(
      "div",
      { class: "bar" },
      h(
        "button",
        {
          type: "button",
          class: "plain",
          onclick: async () => {
            try {
              const r = await call("POST", `${base}/preview`, { channel: channel.value, type: type.value, body: body.value, ...withSubject() });
              preview.replaceChildren(
                h("h2", {}, "Preview"),
                r.subject ? h("p", {}, h("strong", {}, r.subject)) : undefined,
                h("pre", { "data-preview": "" }, r.body),
              );
            } catch (e) {
              preview.replaceChildren(failure(e));
            }
          },
        },
        "Preview",
      ),
      canChange
        ? h(
            "button",
            {
              type: "button",
              onclick: async () => {
                try {
                  await call("PUT", `${base}/${channel.value}/${type.value}`, { body: body.value, ...withSubject() });
                  out.replaceChildren(h("p", { role: "status" }, "Saved."));
                } catch (e) {
                  out.replaceChildren(failure(e));
                }
              },
            },
            "Save",
          )
        : undefined,
    ),
    out,
    preview,
    link(`/console/${env}/projects`, "← All projects"),
  );
  await load();
}

async function loadMe() {
  const me = await call("GET", "/me");
  state.me = me;
  state.csrf = me.csrf_token;
}

async function route() {
  const parts = location.pathname.replace(/\/+$/, "").split("/").slice(2);
  if (parts[0] === "invite") return invitePage();
  if (!state.me) {
    try {
      await loadMe();
    } catch {
      return signInPage();
    }
  }
  if (parts[0] === "sign-in" || parts.length === 0) return go("/console/test/verifications");
  if (!["live", "test"].includes(parts[0])) parts.unshift("test");
  const [env, section, id] = parts;
  header(env, section);
  if (section === "keys") return keysPage(env);
  if (section === "users") return usersPage();
  if (section === "audit") return auditPage();
  if (section === "overview") return pages.overviewPage(env);
  if (section === "profiles" && id) return pages.profilePage(env, id);
  if (section === "profiles") return pages.profilesPage(env);
  if (section === "projects" && id && parts[3] === "branding") return pages.brandingPage(env, id);
  if (section === "requests") return requestsPage(env);
  if (section === "projects" && id) return templatesPage(env, id);
  if (section === "projects") return projectsPage(env);
  if (section === "messages") return messagesPage(env);
  if (section === "webhook") return webhookPage(env);
  if (section === "deliveries") return deliveriesPage(env);
  if (section === "verifications" && id) return verificationPage(env, id);
  return verificationsPage(env);
}

const pages = globalThis.ICVConsolePages({ h, call, show, failure, link, when, state });
window.addEventListener("popstate", route);
route();
