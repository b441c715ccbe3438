// The hosted verification page. Plain browser JavaScript, no dependencies. The request token is
// read from the URL fragment (never sent in a URL except the event stream's ?token=) and goes to
// the API in the X-Request-Token header. Texts come from texts.js (window.ICV_TEXTS); what each
// channel asks for (its name, its start choices, its step and inputs) comes with the asset
// (asset.forms, from the verification service's channels), so this page names no channel.

(() => {
  const T = window.ICV_TEXTS;
  const $ = (id) => document.getElementById(id);
  const requestId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
  const token = location.hash.slice(1);
  const base = `/api/v1/verify/request/${encodeURIComponent(requestId)}`;
  const FINAL = ["completed", "expired", "cancelled"];
  const REDIRECT_DELAY_MS = 1500;

  let state = null;
  const rendered = new Map(); // asset index → JSON of what the card shows
  let redirectTimer = null;
  let events = null;
  let offers = new Map(); // asset index → existing proofs the user may reuse (smart reuse)

  const accounts = window.ICV_ACCOUNTS(el, T);

  document.documentElement.lang = T.lang;
  document.title = T.pageTitle;
  $("progress").textContent = T.loading;

  /** An element with attributes and children; text only through textContent. */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
      else if (k in e && typeof v !== "string") e[k] = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c) e.append(c);
    return e;
  }

  async function api(method, path, body) {
    let res;
    try {
      res = await fetch(base + path, {
        method,
        headers: Object.assign({ "X-Request-Token": token, Accept: "application/json" }, body ? { "Content-Type": "application/json" } : {}),
        body: body ? JSON.stringify(body) : undefined,
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
    } catch {
      throw { code: "network", message: T.errors.network };
    }
    const json = await res.json().catch(() => ({}));
    if (!res.ok) throw json.error || { code: "generic" };
    return json;
  }

  function showError(e) {
    const box = $("alert");
    box.textContent = T.errors[e.code] || e.message || T.errors.generic;
    box.hidden = false;
    box.focus();
  }
  const clearError = () => {
    $("alert").hidden = true;
    $("alert").textContent = "";
  };

  const typeName = (t) => T.types[t] || t;
  /** The form of a channel of asset `a` (its name, start choices, step and inputs). */
  const formOf = (a, c) => a.forms?.[c] || { name: c, deliveries: [], step: "", fields: [] };
  const channelName = (a, c) => formOf(a, c).name;
  const open = () => state && (state.status === "pending" || state.status === "partial") && !state.token_expired;

  /** Runs an action of one asset: disables its buttons meanwhile, shows errors, applies the answer, moves focus. */
  async function act(card, fn, focusAfter) {
    clearError();
    const buttons = card ? [...card.querySelectorAll("button")] : [];
    for (const b of buttons) b.disabled = true;
    const asset = card?.closest("li.asset")?.id;
    try {
      apply(await fn());
      if (focusAfter) focusAfter();
    } catch (e) {
      for (const b of buttons) b.disabled = false;
      // a wrong code spent an attempt: the card shows the count the API now holds
      if (e.attempts_remaining !== undefined || e.code === "max_attempts_exceeded") await api("GET", "").then(apply, () => {});
      fieldError(asset ? $(asset) : null, e);
    }
  }

  /** An error beside the field it is about (the card's form), else in the page's alert. */
  function fieldError(card, e) {
    const form = card?.querySelector("form");
    const input = form?.querySelector("input:not([type=radio]), textarea");
    if (!form || !input) return showError(e);
    const id = `${input.id}-error`;
    let p = form.querySelector(".field-error");
    if (!p) {
      p = el("p", { id, class: "field-error", role: "alert" });
      input.after(p);
    }
    p.textContent = T.errors[e.code] || e.message || T.errors.generic;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", id);
    input.focus();
  }

  function focusAsset(index) {
    const card = $(`asset-${index}`);
    const target = card && (card.querySelector("input, textarea, a.button, button") || card);
    if (target) target.focus();
  }

  function startForm(a) {
    const idId = `identifier-${a.index}`;
    const children = [];
    if (a.identifier === null) {
      const type = a.type === "email" ? "email" : a.type === "phone" ? "tel" : "text";
      children.push(el("label", { for: idId, text: T.identifierLabel[a.type] || T.types[a.type] }));
      children.push(
        el("input", {
          id: idId,
          name: "identifier",
          type,
          required: true,
          autocomplete: a.type === "email" ? "email" : a.type === "phone" ? "tel" : "off",
        }),
      );
    }
    const available = a.channels.filter((c) => a.available_channels.includes(c));
    if (a.channels.length > 1) {
      const firstOk = a.channel && available.includes(a.channel) ? a.channel : available[0];
      children.push(
        el(
          "fieldset",
          {},
          el("legend", { text: T.channelLegend }),
          a.channels.map((c) => {
            const ok = available.includes(c);
            const rid = `channel-${a.index}-${c}`;
            return el(
              "label",
              { class: `choice${ok ? "" : " unavailable"}`, for: rid },
              el("input", { type: "radio", id: rid, name: "channel", value: c, disabled: !ok, checked: c === firstOk }),
              el("span", { text: ok ? channelName(a, c) : `${channelName(a, c)} (${T.unavailable})` }),
            );
          }),
        ),
      );
    } else if (!available.length) {
      children.push(el("p", { text: `${channelName(a, a.channels[0])} (${T.unavailable})` }));
    }
    if (!available.length) return el("div", {}, children, el("p", { text: T.noChannel }));
    // channels whose code travels either way (phones): send the shown code from the phone (inbound),
    // or get a code sent to it (outbound), where the chosen channel's form offers it
    const offered = new Map(a.channels.flatMap((c) => formOf(a, c).deliveries.map((d) => [d.way, d.label])));
    const ways = [...offered].map(([d, label], i) =>
      el(
        "label",
        { class: "choice", for: `delivery-${a.index}-${d}` },
        el("input", { type: "radio", id: `delivery-${a.index}-${d}`, name: "delivery", value: d, checked: i === 0 }),
        el("span", { text: label }),
      ),
    );
    const choosesDelivery = ways.length > 1;
    if (choosesDelivery) children.push(el("fieldset", {}, el("legend", { text: T.deliveryLegend }), ways));
    const form = el("form", { novalidate: true }, children, el("button", { type: "submit", text: a.status === "pending" ? T.start : T.restart }));
    const channelOf = () => (form.querySelector("input[name=channel]:checked") || { value: available[0] }).value;
    // a way the chosen channel does not offer is disabled (and the default chosen instead)
    const fitWays = () => {
      const mine = formOf(a, channelOf()).deliveries.map((d) => d.way);
      for (const w of ways) {
        const input = w.querySelector("input");
        input.disabled = !mine.includes(input.value);
        if (input.disabled && input.checked) ways[0].querySelector("input").checked = true;
      }
    };
    if (choosesDelivery) {
      form.addEventListener("change", fitWays);
      fitWays();
    }
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const body = {};
      const input = form.querySelector("input[name=identifier]");
      if (input) body.identifier = input.value.trim();
      body.channel = channelOf();
      const way = form.querySelector("input[name=delivery]:checked");
      if (way) body.delivery = way.value;
      act(
        form,
        () => api("POST", `/assets/${a.index}/start`, body),
        () => focusAsset(a.index),
      );
    });
    return form;
  }

  /** The submit form of one input of a channel's form ({ name, label, input }). */
  function submitForm(a, f) {
    const field = f.name;
    const fid = `${field}-${a.index}`;
    const form = el(
      "form",
      { novalidate: true },
      el("label", { for: fid, text: f.label }),
      f.input === "textarea"
        ? el("textarea", { id: fid, name: field, required: true, spellcheck: "false" })
        : el("input", {
            id: fid,
            name: field,
            type: "text",
            required: true,
            autocomplete: "one-time-code",
            inputmode: field === "challenge_code" ? "text" : undefined,
            spellcheck: "false",
          }),
      el("button", { type: "submit", text: T.confirm }),
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const value = form.elements[field].value.trim();
      act(
        form,
        () => api("POST", `/assets/${a.index}/submit`, { [field]: value }),
        () => focusAsset(a.index),
      );
    });
    return form;
  }

  function challengeView(a) {
    const ch = a.challenge;
    const out = [];
    const form = formOf(a, a.channel);
    const channel = form.name;
    const [field] = form.fields;
    if (form.step === "send_code" && a.delivery === "outbound") {
      // the code was sent to the phone; the page never shows it, the user types it
      out.push(el("p", { text: state.test_mode ? T.phoneNotSent(channel) : T.phoneSent(channel) }), submitForm(a, field));
    } else if (form.step === "send_code") {
      // reverse OTP: the code is sent from the phone; no code box (a code this page shows is never evidence)
      out.push(el("p", { text: ch.deep_link || !state.test_mode ? T.phoneHow(channel) : T.noLinkInTest(channel) }));
      if (ch.code) out.push(el("p", { class: "tag", text: T.phoneCode }), el("p", { class: "code", text: ch.code }));
      if (ch.deep_link) out.push(el("a", { class: "button", href: ch.deep_link, rel: "noopener noreferrer", target: "_blank", text: T.openApp(channel) }));
      if (ch.qr_code) out.push(el("img", { class: "qr", src: ch.qr_code, alt: T.qrAlt(channel), width: 192, height: 192 }));
    } else if (form.step === "enter_code") {
      out.push(el("p", { text: state.test_mode ? T.emailNotSent : T.emailSent }), submitForm(a, field));
    } else if (form.step === "sign") {
      out.push(el("p", { text: T.signMessage }), el("pre", { text: ch.message || "" }));
      if (form.browser_wallet === "eip1193" && window.ethereum) {
        out.push(
          el("button", {
            type: "button",
            text: T.signWithWallet,
            on: {
              click: async (ev) => {
                const card = ev.target.closest("li");
                let signature;
                try {
                  const hex = `0x${[...new TextEncoder().encode(ch.message)].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
                  signature = await window.ethereum.request({ method: "personal_sign", params: [hex, a.identifier] });
                } catch {
                  return showError({ message: T.walletFailed });
                }
                act(
                  card,
                  () => api("POST", `/assets/${a.index}/submit`, { signature }),
                  () => focusAsset(a.index),
                );
              },
            },
          }),
        );
      }
      out.push(submitForm(a, field));
    } else if (form.step === "sign_in") {
      out.push(...accounts.oauthView(ch, channel));
    } else if (form.step === "api_key") {
      out.push(
        ...accounts.apiKeyView(a, channel, form.fields, (form, body) =>
          act(
            form,
            () => api("POST", `/assets/${a.index}/submit`, body),
            () => focusAsset(a.index),
          ),
        ),
      );
    } else if (form.step === "domain_check") {
      // domain-view.js (window.ICV_DOMAIN_VIEW): the record or file, "check now", what the last check saw
      out.push(...window.ICV_DOMAIN_VIEW(a, { T, el, act, focusAsset, form, check: () => api("POST", `/assets/${a.index}/check`) }));
    } else if (form.step === "bot_token") {
      out.push(el("p", { text: ch.instruction }), submitForm(a, field));
    } else {
      out.push(el("p", { text: ch.instruction }));
    }
    const meta = [T.expiresAt(new Date(ch.expires_at).toLocaleTimeString())];
    // a domain check and a reverse-OTP code have no attempts the user spends here
    const counted = form.step !== "domain_check" && (form.step !== "send_code" || a.delivery === "outbound");
    if (counted) meta.push(T.attemptsLeft(ch.attempts_remaining));
    out.push(el("p", { class: "tag", text: meta.join(" · ") }));
    if (state.test_mode) {
      out.push(
        el("button", {
          type: "button",
          class: "secondary",
          text: T.testComplete,
          on: {
            click: (ev) =>
              act(
                ev.target.closest("li"),
                () => api("POST", `/assets/${a.index}/test-verify`),
                () => focusAsset(a.index),
              ),
          },
        }),
      );
    }
    return out;
  }

  /** Smart reuse: proofs of this asset the user already holds; one click completes it. */
  function reuseOffer(a, proofs) {
    return el(
      "div",
      { class: "reuse" },
      el("p", { text: T.reuseIntro }),
      proofs.slice(0, 3).map((p) =>
        el("button", {
          type: "button",
          text: T.reuseButton(p.identifier, new Date(p.verified_at).toLocaleDateString()),
          on: {
            click: (ev) =>
              act(
                ev.target.closest("li"),
                async () => {
                  await api("POST", `/assets/${a.index}/auto-verify`, { verification_id: p.verification_id });
                  offers.delete(a.index);
                  return api("GET", "");
                },
                () => focusAsset(a.index),
              ),
          },
        }),
      ),
    );
  }

  function assetCard(a) {
    const headingId = `asset-title-${a.index}`;
    const body = [];
    if (a.identifier) body.push(el("p", { class: "identifier", text: a.identifier + (a.channel ? ` · ${channelName(a, a.channel)}` : "") }));
    if (a.status === "verified") {
      body.push(el("p", { text: T.verifiedNote }));
      // domain-view.js: when control was last re-checked and what that check saw
      if (a.domain) body.push(...window.ICV_DOMAIN_RECHECK(a.domain, { T, el }));
    } else if (open()) {
      const reusable = offers.get(a.index) || [];
      if (reusable.length) body.push(reuseOffer(a, reusable));
      if (a.status === "in_progress" && a.challenge) {
        body.push(...challengeView(a));
        if (a.channels.length > 1 || a.type === "email" || a.type === "phone") {
          body.push(el("details", {}, el("summary", { text: T.restart }), startForm(Object.assign({}, a, { status: "in_progress" }))));
        }
      } else body.push(startForm(a));
    }
    return el(
      "li",
      { id: `asset-${a.index}`, class: "asset", tabindex: "-1", "aria-labelledby": headingId },
      el(
        "div",
        { class: "asset-head" },
        el("h2", { id: headingId, text: typeName(a.type) }),
        el("span", { class: `status status-${a.status}`, text: T.statuses[a.status] || a.status }),
      ),
      el("p", { class: "tag", text: a.required ? T.required : T.optional }),
      body,
    );
  }

  /** Applies a new page state: cards that changed are redrawn (others keep what the user typed). */
  function apply(next) {
    const before = state;
    state = next;
    const title = next.action_context?.title;
    $("title").textContent = title || T.titles[next.action_type] || T.pageTitle;
    const desc = next.action_context?.description;
    $("description").hidden = !desc;
    $("description").textContent = desc || "";
    $("test-mode").hidden = !next.test_mode;
    $("test-mode").textContent = T.testMode;
    if (window.ICV_BRANDING) window.ICV_BRANDING(next.branding);

    const list = $("assets");
    const seen = new Set();
    for (const a of next.assets) {
      seen.add(a.index);
      const key = JSON.stringify([a, next.status, next.test_mode, offers.get(a.index) || null]);
      if (rendered.get(a.index) === key) continue;
      const card = assetCard(a);
      const old = $(`asset-${a.index}`);
      const hadFocus = old?.contains(document.activeElement);
      if (old) old.replaceWith(card);
      else list.append(card);
      rendered.set(a.index, key);
      if (hadFocus) focusAsset(a.index);
      const prev = before?.assets.find((x) => x.index === a.index);
      if (prev && prev.status !== a.status) $("announcer").textContent = T.announce(typeName(a.type), T.statuses[a.status] || a.status);
    }
    for (const [index] of rendered) {
      if (seen.has(index)) continue;
      $(`asset-${index}`)?.remove();
      rendered.delete(index);
    }

    const done = next.assets.filter((a) => a.status === "verified").length;
    $("progress").textContent = next.assets.length ? T.progress(done, next.assets.length) : "";
    finish(next);
  }

  /** A final request (or a partial one with partial_ok): say so, and go back to the tenant when it gave a redirect_url. */
  function finish(s) {
    const final = FINAL.includes(s.status) || s.token_expired;
    const partialDone = s.status === "partial" && s.partial_ok && s.redirect_to;
    const box = $("final");
    if (!final && !partialDone) {
      box.hidden = true;
      return;
    }
    const wasHidden = box.hidden;
    $("final-text").textContent = T.final[s.status] || T.final.expired;
    const link = $("continue");
    link.hidden = !s.redirect_to;
    if (s.redirect_to) {
      link.href = s.redirect_to;
      link.textContent = T.continue;
    }
    box.hidden = false;
    if (wasHidden) box.focus();
    if (final) {
      if (events) events.close();
      if (s.redirect_to && !redirectTimer) {
        $("announcer").textContent = T.redirecting;
        redirectTimer = setTimeout(() => location.assign(s.redirect_to), REDIRECT_DELAY_MS);
      }
    }
  }

  function listen() {
    if (!window.EventSource) return;
    events = new EventSource(`${base}/events?token=${encodeURIComponent(token)}`);
    events.addEventListener("request", (ev) => {
      try {
        apply(JSON.parse(ev.data));
      } catch {
        /* a malformed event changes nothing */
      }
    });
  }

  async function load() {
    if (!token) return showError({ code: "not_found" });
    try {
      apply(await api("GET", ""));
    } catch (e) {
      $("progress").textContent = "";
      return showError(e);
    }
    if (open()) {
      listen();
      loadOffers();
    }
  }

  /** Existing proofs for the request's open assets (requests with an external_user_id); optional, errors ignored. */
  async function loadOffers() {
    try {
      const r = await api("GET", "/proofs");
      offers = new Map();
      for (const p of r.proofs || []) offers.set(p.asset_index, (offers.get(p.asset_index) || []).concat(p));
      if (offers.size && state) {
        rendered.clear();
        apply(state);
      }
    } catch {
      /* no reuse offers: the page works without them */
    }
  }

  load();
})();
