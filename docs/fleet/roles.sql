-- Least privilege for a transcope fleet (PostgreSQL 12 or later).
--
-- Run as the fleet database's owner, in that database, once its tables exist: the
-- owner's first `transcope fleet status --to OWNER_URL` (or push) makes them, in one
-- transaction. Then:
--
--   psql "$OWNER_URL" -v ON_ERROR_STOP=1 -f docs/fleet/roles.sql
--   psql "$OWNER_URL" -c "ALTER ROLE transcope_push PASSWORD '…'"   -- and the reader's
--
-- transcope_push: what `transcope fleet push` (and a Stop's push) needs: insert and
--   update on the fleet's tables, and the reads an upsert makes (the row it meets, the
--   machine's mark, the schema's version), temporary tables for COPY. No DELETE, no
--   TRUNCATE, no DDL: a pushing machine can add and advance rows, never remove them.
-- transcope_read: what `--fleet URL` queries and `fleet status` need: SELECT only.
--
-- A migration (a newer transcope's schema) is the owner's to run: connect once with
-- the owner's URL after upgrading; pushers and readers of the old schema are refused
-- with a clear error until their transcope is upgraded too.

DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'transcope_push') THEN
        CREATE ROLE transcope_push LOGIN;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'transcope_read') THEN
        CREATE ROLE transcope_read LOGIN;
    END IF;
    EXECUTE format('GRANT CONNECT, TEMPORARY ON DATABASE %I TO transcope_push', current_database());
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO transcope_read', current_database());
END
$$;

GRANT USAGE ON SCHEMA public TO transcope_push, transcope_read;
GRANT SELECT ON transcope_schema TO transcope_push, transcope_read;

GRANT SELECT, INSERT, UPDATE
    ON machines, sessions, transitions, markers, usage, usage_parts, fleet_meta
    TO transcope_push;
GRANT USAGE ON SEQUENCE markers_found TO transcope_push;

GRANT SELECT
    ON machines, sessions, transitions, markers, usage, usage_parts, fleet_meta
    TO transcope_read;
