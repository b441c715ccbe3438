-- Half of each outbox page is left free at insert (docs/performance.md, issue 33), so that the
-- relay's stamp (seq, published_at) puts the row's new version on the same page: Postgres then
-- logs only the bytes that changed, not the whole row with its payload again.
ALTER TABLE {{schema}}.outbox SET (fillfactor = 50);
