-- rein store schema 4: indexes for the two ways runs are looked up by
-- something else than their whole ID, status or flow (ListRuns).
--
-- An ID prefix (rein runs show 01a2…) is a byte-wise range on id
-- (~>=~ and ~<~), which the primary key, ordered by the database's
-- collation, answers only under the C collation; text_pattern_ops answers
-- it under any.
CREATE INDEX rein_runs_id_prefix ON rein_runs (id text_pattern_ops);
-- A session's runs, newest first (rein chat --session reads the earlier
-- exchanges). Runs without a session, most of them, are not in it.
CREATE INDEX rein_runs_session ON rein_runs (session, ord) WHERE session <> '';
