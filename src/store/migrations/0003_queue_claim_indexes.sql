-- Indexes that keep a claim cheap however long the queue grows: the claim walks open jobs in
-- seq order and, per candidate, looks up older open jobs and running jobs of the same pull
-- request or fleet. Partial indexes (both engines have them) cover only open jobs, so
-- finished jobs kept for the retention period cost the claim nothing.
DROP INDEX IF EXISTS jobs_open;

CREATE INDEX IF NOT EXISTS jobs_open_seq ON jobs (seq, id) WHERE state IN ('queued', 'running');

CREATE INDEX IF NOT EXISTS jobs_open_pr ON jobs (pr_key, seq) WHERE state IN ('queued', 'running');

CREATE INDEX IF NOT EXISTS jobs_open_fleet ON jobs (fleet_key, seq) WHERE state IN ('queued', 'running');
