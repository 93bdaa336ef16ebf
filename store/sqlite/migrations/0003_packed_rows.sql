-- rein store schema 3: a journal row may be packed. When a row's frames
-- are large enough, both columns' frames are stored as one S2 block in
-- events, behind a 0x00 byte, and steps is NULL (store/sqlite/pack.go).
-- A W5 transition's row shrinks from ~1,080 bytes to ~570.
--
-- No table changes. The schema version moves so that a binary older than
-- this one, which would read a packed row as damage, refuses the file
-- ("written by a newer rein") instead. Rows written before stay plain and
-- read as before.
SELECT 1;
