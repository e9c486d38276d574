-- A rate for every group nobody declared (PATCH /groups-default {"rate": "<n>/<duration>"}), each
-- group counted on its own, beside the default concurrency of 0024.
ALTER TABLE flow_default
  ADD COLUMN rate_limit     integer CHECK (rate_limit >= 1),
  ADD COLUMN rate_window_ms bigint  CHECK (rate_window_ms >= 1),
  ADD CONSTRAINT flow_default_rate_pair CHECK ((rate_limit IS NULL) = (rate_window_ms IS NULL));

-- The tokens of the default rate live in flow_token under kind 'default-group' (apart from the
-- declared keys' rows): made by the lease that first needs one (an upsert that takes it only while
-- it was last used a whole window ago, re-checked on its newest version), and deleted by the
-- reaper once out of every window. Used ones, read once by every lease while a default rate is set
-- (a range of this index: the tokens used within the last window), and by the reaper:
CREATE INDEX flow_token_default_used_idx ON flow_token (used_at) WHERE kind = 'default-group';
