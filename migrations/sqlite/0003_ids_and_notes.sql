-- stpreset store, schema version 3 (issue 20's review).
-- Preset ids are never reused: with `INTEGER PRIMARY KEY` alone, deleting the newest preset freed
-- its id for the next upload, so an id a bot or an admin still held (to activate it, or to let
-- its regex scripts run) could come to name a stranger's preset. `st_id_floor` holds the highest
-- id ever issued; an import takes the next one.
CREATE TABLE st_id_floor (id INTEGER NOT NULL);
INSERT INTO st_id_floor (id) SELECT COALESCE(MAX(id), 0) FROM st_presets;
-- How many lone UTF-16 surrogates the imported file held (each stored as U+FFFD), so a render of
-- the stored preset still carries its `LoneSurrogate` note.
ALTER TABLE st_presets ADD COLUMN lone_surrogates INTEGER NOT NULL DEFAULT 0
    CHECK (lone_surrogates >= 0);
