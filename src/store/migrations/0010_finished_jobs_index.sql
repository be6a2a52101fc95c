-- Only finished jobs are pruned by when they finished, so only they are indexed by it: a queued
-- job no longer costs an entry here when it is written (it did, under `finished_at = 0`), and
-- finishing one adds its entry instead of moving it. The pruning statements say
-- `state IN ('done', 'failed')`, which lets the planner use it (SQLite matches an `IN` term
-- only when it is written the same, values in the same order).
DROP INDEX IF EXISTS jobs_finished_at;

CREATE INDEX IF NOT EXISTS jobs_finished_at ON jobs (finished_at) WHERE state IN ('done', 'failed')
