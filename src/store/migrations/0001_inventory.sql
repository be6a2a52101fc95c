-- The fleet inventory: what fleetbot created and recorded, per target and per project.
CREATE TABLE IF NOT EXISTS inventory_targets (
    fleet TEXT NOT NULL,
    project_key TEXT NOT NULL,
    cluster_name TEXT NOT NULL,
    backend TEXT NOT NULL,
    status TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    region TEXT NOT NULL,
    profile TEXT NOT NULL,
    project_id TEXT NOT NULL,
    cluster_id TEXT NOT NULL,
    node_group_ids TEXT NOT NULL,
    filesystem_id TEXT NOT NULL,
    filesystem_created BIGINT NOT NULL,
    gpu_cluster_id TEXT NOT NULL,
    subnet_id TEXT NOT NULL,
    applied_digest TEXT NOT NULL,
    error TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (fleet, project_key, cluster_name)
);

CREATE TABLE IF NOT EXISTS inventory_projects (
    fleet TEXT NOT NULL,
    project_key TEXT NOT NULL,
    project_id TEXT NOT NULL,
    project_created BIGINT NOT NULL,
    created_network_id TEXT NOT NULL,
    created_subnet_id TEXT NOT NULL,
    subnet_id TEXT NOT NULL,
    bucket_id TEXT NOT NULL,
    bucket_name TEXT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (fleet, project_key)
);
