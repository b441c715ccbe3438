-- Verified users (GET /api/v1/verifications/users): the grouping by external_user_id of a scope's
-- verified verifications reads this index only (count, distinct types, first/last verified_at).
CREATE INDEX verifications_verified_users ON verification.verifications (tenant_id, environment, external_user_id, verified_at)
  INCLUDE (type) WHERE status = 'verified' AND external_user_id IS NOT NULL;
