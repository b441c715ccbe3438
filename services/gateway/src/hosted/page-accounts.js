// The hosted page's views of social and exchange accounts (served as /hosted/accounts.js, before
// page.js): the "Sign in with …" link of OAuth channels and Kraken's API-key form. page.js calls
// window.ICV_ACCOUNTS(el, T) with its element builder and texts.

window.ICV_ACCOUNTS = (el, T) => ({
  /** Social and coinbase: a link to the single-use start URL (the provider brings the user back). */
  oauthView(ch, channel) {
    const out = [el("p", { text: T.oauthHow(channel) })];
    if (ch.deep_link) out.push(el("a", { class: "button", id: "oauth-sign-in", href: ch.deep_link, rel: "noopener noreferrer", text: T.oauthButton(channel) }));
    return out;
  },

  /** Kraken: a read-only API key and its secret, submitted once (never stored); `submit(form, body)` sends them. */
  apiKeyView(a, channel, submit) {
    const kid = `api_key-${a.index}`;
    const sid = `api_secret-${a.index}`;
    const form = el(
      "form",
      { novalidate: true },
      el("label", { for: kid, text: T.apiKeyLabel }),
      el("input", { id: kid, name: "api_key", type: "text", required: true, autocomplete: "off", spellcheck: "false" }),
      el("label", { for: sid, text: T.apiSecretLabel }),
      el("input", { id: sid, name: "api_secret", type: "password", required: true, autocomplete: "off", spellcheck: "false" }),
      el("button", { type: "submit", text: T.confirm }),
    );
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit(form, { api_key: form.elements.api_key.value.trim(), api_secret: form.elements.api_secret.value.trim() });
    });
    return [el("p", { text: T.apiKeyHow(channel) }), form];
  },
});
