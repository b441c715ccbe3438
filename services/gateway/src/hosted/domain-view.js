// The hosted page's domain asset (checked by DNS or HTTP): the record or file to publish, a
// "check now" button, and what the last check saw on each server or URL. Plain browser
// JavaScript; page-client.js calls window.ICV_DOMAIN_VIEW(asset, helpers) and appends the answer;
// helpers.form is the channel's form (its `publishes` says whether the record or the file is shown).

/** A verified domain asset: when control was last re-checked, what that check saw, and the next one. */
window.ICV_DOMAIN_RECHECK = (d, h) => {
  const T = h.T;
  const el = h.el;
  const c = d.last_check;
  // by email: nothing stays published, nothing is re-checked
  if (!d.dns_record && !d.http_file) return [];
  const out = [el("p", { text: T.domain.keepRecord })];
  if (c) {
    out.push(
      el(
        "section",
        { class: "last-check", "aria-label": T.domain.lastCheck },
        el("p", { class: "tag", text: T.domain.recheckedAt(new Date(c.checked_at).toLocaleString()) }),
        el("p", { class: c.passed ? "check-ok" : "check-bad", text: c.summary }),
      ),
    );
  }
  if (d.next_recheck_at) out.push(el("p", { class: "tag", text: T.domain.nextRecheck(new Date(d.next_recheck_at).toLocaleString()) }));
  return out;
};

window.ICV_DOMAIN_VIEW = (a, h) => {
  const T = h.T;
  const el = h.el;
  const d = a.domain || {};

  /** Label/value pairs of a record or file, each value in its own copyable block. */
  const fields = (pairs) =>
    el(
      "dl",
      { class: "domain-fields" },
      pairs.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", {}, el("code", { text: v }))]),
    );

  /** What the last check saw: its summary, then each server or URL with what it showed. */
  function lastCheck(c, count) {
    return el(
      "section",
      { class: "last-check", "aria-label": T.domain.lastCheck },
      el("p", { class: "tag", text: T.domain.checkedAt(new Date(c.checked_at).toLocaleTimeString(), count) }),
      el("p", { class: c.passed ? "check-ok" : "check-bad", text: c.summary }),
      c.found.length
        ? el(
            "ul",
            { class: "check-found" },
            c.found.map((f) => el("li", { text: `${f.source}: ${f.error ? f.error : f.values.length ? f.values.join(", ") : T.domain.nothing}` })),
          )
        : null,
    );
  }

  const out = [];
  if (h.form.publishes === "http_file" && d.http_file) {
    out.push(
      el("p", { text: T.domain.fileIntro(a.identifier) }),
      fields([
        [T.domain.path, d.http_file.path],
        [T.domain.content, d.http_file.content],
      ]),
    );
  } else if (d.dns_record) {
    out.push(
      el("p", { text: T.domain.recordIntro }),
      fields([
        [T.domain.type, d.dns_record.type],
        [T.domain.name, d.dns_record.name],
        [T.domain.value, d.dns_record.value],
      ]),
    );
  } else {
    out.push(el("p", { text: a.challenge.instruction }), el("pre", { text: a.challenge.message || "" }));
  }
  out.push(
    el("p", { text: T.domain.when }),
    el("button", {
      type: "button",
      class: "check-now",
      text: T.domain.checkNow,
      on: { click: (ev) => h.act(ev.target.closest("li"), h.check, () => h.focusAsset(a.index)) },
    }),
  );
  if (d.last_check) out.push(lastCheck(d.last_check, d.check_count));
  return out;
};
