// The hosted page's views of social and exchange accounts (served as /hosted/accounts.js, before
// page.js): the "Sign in with …" link of OAuth channels and the API-key form of exchanges that
// take a read-only key. page.js calls window.ICV_ACCOUNTS(el, T) with its element builder and texts.

window.ICV_ACCOUNTS = (el, T) => ({
  /** OAuth channels: a link to the single-use start URL (the provider brings the user back). */
  oauthView(ch, channel) {
    const out = [el("p", { text: T.oauthHow(channel) })];
    if (ch.deep_link) out.push(el("a", { class: "button", id: "oauth-sign-in", href: ch.deep_link, rel: "noopener noreferrer", text: T.oauthButton(channel) }));
    return out;
  },

  /**
   * An exchange API key and its secret, submitted once (never stored): the inputs of the channel's
   * form (`fields`: name, label, input); `submit(form, body)` sends them.
   */
  apiKeyView(a, channel, fields, submit) {
    const inputs = fields.flatMap((f) => {
      const id = `${f.name}-${a.index}`;
      return [
        el("label", { for: id, text: f.label }),
        el("input", { id, name: f.name, type: f.input === "password" ? "password" : "text", required: true, autocomplete: "off", spellcheck: "false" }),
      ];
    });
    const form = el("form", { novalidate: true }, inputs, el("button", { type: "submit", text: T.confirm }));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit(form, Object.fromEntries(fields.map((f) => [f.name, form.elements[f.name].value.trim()])));
    });
    return [el("p", { text: T.apiKeyHow(channel) }), form];
  },
});
