// A session's hosted page (session_url): a phone-first or auth session's deep link, QR code and
// instructions, and its status, polled every 2 s while pending. Plain browser JavaScript; the
// signature is read from the URL fragment and goes to the API in the X-Session-Token header.
// Texts come from texts.js (window.ICV_TEXTS.session).

(() => {
  const T = window.ICV_TEXTS;
  const S = T.session;
  const $ = (id) => document.getElementById(id);
  const id = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
  const signature = location.hash.slice(1);
  const POLL_MS = 2000;
  // the names of the channels a session answers over (the verification page's forms carry theirs;
  // a session's answer does not yet)
  const CHANNEL_NAMES = { whatsapp: "WhatsApp", telegram: "Telegram", sms: "SMS" };
  let shown = "";

  document.documentElement.lang = T.lang;
  $("progress").textContent = T.loading;

  /** An element with attributes and children; text only through textContent. */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat()) if (c) e.append(c);
    return e;
  }

  function showError(code) {
    $("progress").textContent = "";
    const box = $("alert");
    box.textContent = S.errors[code] || T.errors.generic;
    box.hidden = false;
    box.focus();
  }

  function render(s) {
    const key = JSON.stringify(s);
    if (key === shown) return;
    shown = key;
    const channel = CHANNEL_NAMES[s.channel] || s.channel;
    document.title = $("title").textContent = s.kind === "auth" ? S.titles[s.type] || S.titles["2fa"] : S.titles.phone;
    const brand = $("branding");
    brand.hidden = !s.business_name;
    brand.replaceChildren(s.business_name ? el("span", { class: "brand-name", text: S.asking(s.business_name) }) : "");
    $("test-mode").hidden = !s.test_mode;
    $("test-mode").textContent = S.testMode;
    $("progress").textContent = S.status[s.status] || s.status;

    const card = $("session");
    const body = [];
    if (s.status === "pending") {
      body.push(el("p", { text: s.instructions }));
      if (s.deep_link)
        body.push(el("p", {}, el("a", { class: "button", href: s.deep_link, rel: "noopener noreferrer", target: "_blank", text: T.openApp(channel) })));
      else if (s.test_mode) body.push(el("p", { text: S.noLinkInTest(channel) }));
      if (s.qr_code) body.push(el("p", { text: S.scan(channel) }), el("img", { class: "qr", src: s.qr_code, alt: T.qrAlt(channel), width: 192, height: 192 }));
      body.push(el("p", { class: "tag", text: T.expiresAt(new Date(s.expires_at).toLocaleTimeString()) }));
    } else {
      body.push(el("p", { class: `status status-${s.status}`, text: S.done[s.status] || s.status }));
    }
    card.replaceChildren(...body);
    card.hidden = false;
  }

  async function poll() {
    let res;
    try {
      res = await fetch(`/api/v1/session-page/${encodeURIComponent(id)}`, {
        headers: { "X-Session-Token": signature, Accept: "application/json" },
        cache: "no-store",
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
    } catch {
      $("progress").textContent = T.live.lost;
      return setTimeout(poll, POLL_MS);
    }
    if (!res.ok) return showError(res.status === 404 ? "not_found" : "generic");
    const s = await res.json();
    render(s);
    if (s.status === "pending") setTimeout(poll, POLL_MS);
  }

  if (!signature) showError("not_found");
  else poll();
})();
