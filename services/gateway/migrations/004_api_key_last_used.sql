-- When a request last authenticated with the key, to about a minute (written at most once a
-- minute per key, when a replica looks the key up rather than finding it in its cache)
ALTER TABLE gateway.api_keys ADD COLUMN last_used_at timestamptz;
