-- The project whose templates a session's bot replies use (NULL: the tenant environment's default project).
ALTER TABLE session.sessions ADD COLUMN project_id text;
