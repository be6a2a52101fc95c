-- Each head a pull request moved to, with when fleetbot learned of it (the arrival of the
-- pull_request delivery that named it). `/apply` applies only the head that was current when
-- its comment was written: the newest row at or before the comment's creation. Append-only:
-- a force-push back to an older head is a new row, so "the head at time T" stays a fact.
CREATE TABLE IF NOT EXISTS deploy_pr_heads (
    pr_key TEXT NOT NULL,
    head_sha TEXT NOT NULL,
    seen_at BIGINT NOT NULL,
    PRIMARY KEY (pr_key, seen_at, head_sha)
);
