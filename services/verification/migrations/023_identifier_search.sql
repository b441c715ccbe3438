-- The console's search by identifier (rpc/insights.ts) compares the blind index within a tenant's
-- environment. Partial (only sealed rows have an index) and led by the scope, so the planner does
-- not take it for the verified-users grouping, which keeps its own index (021's note).
CREATE INDEX verifications_identifier_search ON verification.verifications (tenant_id, environment, identifier_index)
  WHERE identifier_index IS NOT NULL;
