-- stpreset store, schema version 1 (SPEC §7).
CREATE TABLE st_presets (
    id          INTEGER PRIMARY KEY,
    server_id   INTEGER NOT NULL,
    name        TEXT    NOT NULL,
    raw_json    TEXT    NOT NULL,
    active      INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1)),
    description TEXT,
    created_at  TEXT    NOT NULL,
    updated_at  TEXT    NOT NULL,
    UNIQUE (server_id, name)
);

-- At most one active preset per server, enforced by the database itself.
CREATE UNIQUE INDEX st_presets_one_active ON st_presets (server_id) WHERE active = 1;

CREATE TABLE st_preset_nodes (
    preset_id          INTEGER NOT NULL REFERENCES st_presets (id) ON DELETE CASCADE,
    identifier         TEXT    NOT NULL,
    name               TEXT    NOT NULL,
    role               TEXT    NOT NULL,
    content            TEXT    NOT NULL,
    marker             INTEGER NOT NULL,
    enabled            INTEGER NOT NULL,
    comment_only       INTEGER NOT NULL,
    order_index        INTEGER NOT NULL,
    injection_position INTEGER NOT NULL,
    injection_depth    INTEGER NOT NULL,
    injection_order    INTEGER NOT NULL,
    PRIMARY KEY (preset_id, identifier)
);

CREATE INDEX st_preset_nodes_order ON st_preset_nodes (preset_id, order_index);
