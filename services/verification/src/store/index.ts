/** The verification service's storage: one file per aggregate; the only files with SQL. */
export * from "./rows.ts";
export { TEST_MESSAGE_TTL_MS } from "./test-messages.ts";
export { VerificationStore } from "./verifications.ts";
export { RequestStore } from "./requests.ts";
export { DomainCheckStore, type DomainCheckRow, type NewDomainCheck, type StoredCheck, type StoredObservation } from "./domain-checks.ts";
export { OAuthStore, type OAuthStateRow } from "./oauth.ts";
export {
  ProjectStore,
  PROJECT_FIELDS,
  type ProjectRow,
  type ProjectValues,
  type ProjectField,
  type TemplateRow,
  type ProjectWithTemplate,
} from "./projects.ts";
export { ProfileStore } from "./profiles.ts";
export type { ListedVerification, MaskLevel, ProfileFields, ProfileProofItem, ProfileRow } from "./profiles.ts";
