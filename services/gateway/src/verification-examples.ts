// Hand-written examples of the schemas developers meet first (the OpenAPI document shows them;
// services/gateway/test/openapi.test.ts checks them against their schemas).

/** A create body: the walkthrough's phone verification (docs/walkthrough.md). */
export const CREATE_VERIFICATION_EXAMPLE = {
  type: "phone",
  channel: "telegram",
  identifier: "+370 691 99199",
  external_user_id: "user-42",
  client_metadata: { signup: "web" },
};

/** The walkthrough's verification as created (docs/walkthrough.md). */
export const VERIFICATION_EXAMPLE = {
  id: "ver_01M80FSQZ6SP5J0XCXB13KRSNC",
  type: "phone",
  channel: "telegram",
  status: "pending",
  identifier: "+37069199199",
  challenge: {
    code: "6RQYZ2",
    expires_at: "2026-11-22T02:11:42.118Z",
    instruction: "Open @icv_test_bot in Telegram, press Start and share your phone number (or send the code 6RQYZ2).",
    deep_link: "https://t.me/icv_test_bot?start=6RQYZ2",
  },
  created_at: "2026-11-22T02:01:42.118Z",
  external_user_id: "user-42",
  attempts: 0,
  max_attempts: 5,
  test_mode: true,
  delivery: "inbound",
  updated_at: "2026-11-22T02:01:42.118Z",
  proof_format: "jwt",
};
