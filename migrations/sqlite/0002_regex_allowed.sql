-- stpreset store, schema version 2 (SPEC §13.6.1): whether the server lets a preset's regex
-- scripts run. Off for every existing preset; re-importing a preset resets it.
ALTER TABLE st_presets ADD COLUMN regex_allowed INTEGER NOT NULL DEFAULT 0
    CHECK (regex_allowed IN (0, 1));
