-- Lifecycle generations: bumped each time destroy completes for a target (or reclaims a
-- project's network, under cluster_name ''), and kept after the target's record is removed,
-- so a re-create after destroy is a new request to the cloud while a retried create is not.
CREATE TABLE IF NOT EXISTS inventory_lifecycles (
    fleet TEXT NOT NULL,
    project_key TEXT NOT NULL,
    cluster_name TEXT NOT NULL,
    generation BIGINT NOT NULL,
    PRIMARY KEY (fleet, project_key, cluster_name)
);
