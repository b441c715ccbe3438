// one copy of the provider-failure wording, shared with the verification service's code sends
export { failureReason } from "@icv/platform";
