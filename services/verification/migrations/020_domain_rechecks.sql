-- Current control (issue 27): scheduled re-checks of verified domains, and the unreachable streak
-- (a name server that times out suspends a proof only after 3 consecutive failed checks).
ALTER TABLE verification.domain_checks ADD COLUMN recheck_interval_s integer;
-- when the sweeper re-checks it next; while a replica checks it, pushed ahead by a lease
ALTER TABLE verification.domain_checks ADD COLUMN next_recheck_at timestamptz;
ALTER TABLE verification.domain_checks ADD COLUMN unreachable_count integer NOT NULL DEFAULT 0;
CREATE INDEX domain_checks_due ON verification.domain_checks (next_recheck_at) WHERE next_recheck_at IS NOT NULL;
