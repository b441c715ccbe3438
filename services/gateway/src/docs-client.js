// The API reference's configuration, served as /docs/assets/docs.<hash>.js after Scalar's standalone
// bundle (/docs/assets/scalar.<hash>.js, window.Scalar). It renders /api/openapi.json of this origin;
// nothing is fetched from anywhere else (no default fonts, no telemetry, no agent, no proxy), and the
// page's CSP (connect-src 'self') would refuse it anyway.
(() => {
  // try-it authenticates with a test key or not at all: a live key (or anything else) typed into the
  // auth field is removed from the request before it leaves, so the server answers 401
  const TEST_KEY = /^Bearer\s+pk_test_[A-Za-z0-9_-]+$/;
  const onlyTestKeys = ({ request }) => {
    const auth = request.headers.get("authorization");
    if (auth !== null && !TEST_KEY.test(auth.trim())) {
      request.headers.delete("authorization");
      console.warn("try-it sends test keys only (pk_test_…): the Authorization header was removed");
    }
  };
  window.Scalar.createApiReference("#reference", {
    url: "/api/openapi.json",
    // try-it calls this server, whatever servers the document names
    servers: [{ url: window.location.origin, description: "This server" }],
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    showDeveloperTools: "never",
    hideDarkModeToggle: false,
    documentDownloadType: "json",
    persistAuth: false,
    authentication: { preferredSecurityScheme: "bearer", securitySchemes: { bearer: { token: "pk_test_" } } },
    onBeforeRequest: onlyTestKeys,
  });
})();
