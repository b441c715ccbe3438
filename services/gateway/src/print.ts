/** Shows the development tenant's keys once, on the terminal (never through the logger). */
export function printDevTenant(
  t: { tenantId: string; liveKey: string; testKey: string; liveWebhookSecret: string; testWebhookSecret: string },
  url: string,
): void {
  process.stdout.write(
    `${[
      "",
      "  A development tenant was created. Its keys are shown only now:",
      `    tenant   ${t.tenantId}`,
      `    test key ${t.testKey}`,
      `    live key ${t.liveKey}`,
      `    webhook secrets: test ${t.testWebhookSecret}  live ${t.liveWebhookSecret}`,
      "",
      `  Try: curl -s ${url}/api/v1/verifications -H "Authorization: Bearer ${t.testKey}" \\`,
      `         -H 'Content-Type: application/json' -d '{"type":"email","channel":"email","identifier":"you@example.com"}'`,
      "",
    ].join("\n")}\n`,
  );
}
