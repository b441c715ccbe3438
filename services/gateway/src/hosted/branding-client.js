// The hosted page's branding partial: the request's project (business name, logo, colour, support
// address). Text through textContent only; the colour is checked again here and set as a CSS custom
// property through the CSSOM (the CSP allows no inline style); the logo comes from our own origin
// (the gateway's logo proxy), so img-src stays 'self'.

window.ICV_BRANDING = (b) => {
  const box = document.getElementById("branding");
  if (!box) return;
  const key = JSON.stringify(b || null);
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  box.replaceChildren();
  box.hidden = !b || !(b.business_name || b.logo_url);
  const root = document.documentElement.style;
  if (b && /^#(?:[0-9a-f]{3}){1,2}$/i.test(b.primary_color || "")) root.setProperty("--accent", b.primary_color);
  else root.removeProperty("--accent");
  const support = document.getElementById("support");
  if (support) {
    support.replaceChildren();
    support.hidden = !b?.support_email;
  }
  if (!b) return;
  if (b.logo_url?.startsWith("/hosted/logo/")) {
    const img = document.createElement("img");
    img.src = b.logo_url;
    img.alt = b.business_name ? `${b.business_name} logo` : "Logo";
    img.className = "brand-logo";
    img.addEventListener("error", () => img.remove());
    box.append(img);
  }
  if (b.business_name) {
    const name = document.createElement("span");
    name.className = "brand-name";
    name.textContent = b.business_name;
    box.append(name);
  }
  if (support && b.support_email) {
    const T = window.ICV_TEXTS;
    const a = document.createElement("a");
    a.href = `mailto:${encodeURIComponent(b.support_email).replace(/%40/g, "@")}`;
    a.textContent = b.support_email;
    support.append(T?.support || "Questions? ", a);
  }
};
