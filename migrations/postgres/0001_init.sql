-- stpreset store on PostgreSQL, schema version 1: the SQLite store's schema 3 (docs/store.md)
-- in its own schema, plus the triggers that tell every instance about every change.
-- Text stays `text`, not `jsonb` (which reorders keys, drops duplicates and refuses \u0000).
-- PostgreSQL's text cannot hold U+0000: a preset whose text has one is stored with
-- `nul_escaped` set, its text columns (its own and its nodes') escaped as `\` -> `\\` and
-- U+0000 -> `\0`. Rows without it are stored as they are.
CREATE TABLE stpreset.st_presets (
    id              bigint  PRIMARY KEY,
    server_id       bigint  NOT NULL,
    name            text    NOT NULL,
    raw_json        text    NOT NULL,
    active          boolean NOT NULL DEFAULT false,
    description     text,
    created_at      text    NOT NULL,
    updated_at      text    NOT NULL,
    regex_allowed   boolean NOT NULL DEFAULT false,
    lone_surrogates bigint  NOT NULL DEFAULT 0 CHECK (lone_surrogates >= 0),
    nul_escaped     boolean NOT NULL DEFAULT false,
    UNIQUE (server_id, name)
);

-- At most one active preset per server, enforced by the database itself.
CREATE UNIQUE INDEX st_presets_one_active ON stpreset.st_presets (server_id) WHERE active;

CREATE TABLE stpreset.st_preset_nodes (
    preset_id          bigint  NOT NULL REFERENCES stpreset.st_presets (id) ON DELETE CASCADE,
    identifier         text    NOT NULL,
    name               text    NOT NULL,
    role               text    NOT NULL,
    content            text    NOT NULL,
    marker             boolean NOT NULL,
    enabled            boolean NOT NULL,
    comment_only       boolean NOT NULL,
    order_index        bigint  NOT NULL,
    injection_position integer NOT NULL,
    injection_depth    integer NOT NULL,
    injection_order    integer NOT NULL,
    PRIMARY KEY (preset_id, identifier)
);

CREATE INDEX st_preset_nodes_order ON stpreset.st_preset_nodes (preset_id, order_index);

-- Preset ids: never reused (a deleted preset's id could otherwise come to name a stranger's
-- upload), and handed out without a lock that imports for different servers would queue on.
CREATE SEQUENCE stpreset.st_preset_ids;

-- Every change, by this store or by any other tool, notifies `stpreset_changes` with the
-- server id, in the changing transaction (so a rolled-back change notifies nobody).
-- Statement-level triggers: an import of 500 nodes sends one notification, not 500.
CREATE FUNCTION stpreset.st_notify_presets() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    server bigint;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        FOR server IN SELECT DISTINCT server_id FROM new_rows LOOP
            PERFORM pg_notify('stpreset_changes', server::text);
        END LOOP;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        FOR server IN SELECT DISTINCT server_id FROM old_rows LOOP
            PERFORM pg_notify('stpreset_changes', server::text);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

-- A node's server is its preset's; a node whose preset is gone (a cascade) was announced by
-- the preset's own delete.
CREATE FUNCTION stpreset.st_notify_nodes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    server bigint;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        FOR server IN SELECT DISTINCT p.server_id FROM new_rows n
                      JOIN stpreset.st_presets p ON p.id = n.preset_id LOOP
            PERFORM pg_notify('stpreset_changes', server::text);
        END LOOP;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        FOR server IN SELECT DISTINCT p.server_id FROM old_rows n
                      JOIN stpreset.st_presets p ON p.id = n.preset_id LOOP
            PERFORM pg_notify('stpreset_changes', server::text);
        END LOOP;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION stpreset.st_notify_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('stpreset_changes', '*');
    RETURN NULL;
END $$;

CREATE TRIGGER st_presets_inserted AFTER INSERT ON stpreset.st_presets
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_presets();
CREATE TRIGGER st_presets_updated AFTER UPDATE ON stpreset.st_presets
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_presets();
CREATE TRIGGER st_presets_deleted AFTER DELETE ON stpreset.st_presets
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_presets();
CREATE TRIGGER st_presets_truncated AFTER TRUNCATE ON stpreset.st_presets
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_all();

CREATE TRIGGER st_nodes_inserted AFTER INSERT ON stpreset.st_preset_nodes
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_nodes();
CREATE TRIGGER st_nodes_updated AFTER UPDATE ON stpreset.st_preset_nodes
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_nodes();
CREATE TRIGGER st_nodes_deleted AFTER DELETE ON stpreset.st_preset_nodes
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_nodes();
CREATE TRIGGER st_nodes_truncated AFTER TRUNCATE ON stpreset.st_preset_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION stpreset.st_notify_all();
