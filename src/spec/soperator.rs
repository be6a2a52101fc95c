//! The `soperator` backend envelope: Slurm-on-Kubernetes targets, their defaults and rules.

use super::error::SpecError;
use super::parse::{Reader, join};
use super::yaml::{Entry, Node, Pos, Value};

pub const DEFAULT_SLURM_OPERATOR_VERSION: &str = "4.1.6";
pub const DEFAULT_K8S_VERSION: &str = "1.34";
pub const DEFAULT_NODE_GROUP_VERSION: &str = "72";

const ALLOWED: &[&str] = &[
    "name",
    "workers",
    "control_plane",
    "root_login_ssh_public_key",
    "ssh_public_keys",
    "accounting",
    "slurm_rest_enabled",
    "telemetry",
    "use_default_apparmor_profile",
    "jail_size_gib",
    "slurm_operator_version",
    "k8s_version",
    "node_group_version",
];

const WORKER_ALLOWED: &[&str] = &[
    "name",
    "platform",
    "preset",
    "size",
    "boot_disk_gib",
    "fabric",
    "preemptible",
    "docker_cache",
    "docker_cache_gib",
    "docker_cache_disk_type",
    "capacity_block_group",
    "capacity_block_group_name",
];

/// cpu-d3 presets a control-plane role may use, smallest first, with their vCPU rank.
const CPU_D3_PRESET_RANK: &[(&str, u32)] = &[
    ("4vcpu-16gb", 4),
    ("8vcpu-32gb", 8),
    ("16vcpu-64gb", 16),
    ("32vcpu-128gb", 32),
    ("64vcpu-256gb", 64),
    ("128vcpu-512gb", 128),
];

/// One Slurm worker pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPoolSpec {
    pub name: String,
    pub platform: String,
    pub preset: String,
    pub size: i64,
    pub boot_disk_gib: i64,
    pub fabric: String,
    pub preemptible: bool,
    pub docker_cache: bool,
    pub docker_cache_gib: i64,
    pub docker_cache_disk_type: String,
    pub capacity_block_group: String,
    pub capacity_block_group_name: String,
}

impl WorkerPoolSpec {
    pub fn capacity_mode(&self) -> &'static str {
        if !self.capacity_block_group.is_empty() || !self.capacity_block_group_name.is_empty() {
            "reserved"
        } else if self.preemptible {
            "preemptible"
        } else {
            "on-demand"
        }
    }

    pub fn reservation_selector_kind(&self) -> Option<&'static str> {
        if !self.capacity_block_group.is_empty() {
            Some("id")
        } else if !self.capacity_block_group_name.is_empty() {
            Some("name")
        } else {
            None
        }
    }

    pub fn is_gpu(&self) -> bool {
        self.platform.starts_with("gpu-")
    }

    fn validate(&self) -> Result<(), String> {
        let n = &self.name;
        if n.is_empty() || !n.replace('-', "").chars().all(char::is_alphanumeric) {
            return Err(format!(
                "worker pool name must be alphanumeric/dash: {}",
                super::names::py_repr(n)
            ));
        }
        if self.size < 1 {
            return Err(format!("worker pool {n}: size must be >= 1"));
        }
        if self.is_gpu() && self.fabric.is_empty() {
            return Err(format!(
                "worker pool {n}: GPU preset {} requires a non-empty 'fabric' (region InfiniBand fabric id). 1-GPU presets cannot cluster; use an 8-GPU SXM preset for GPU workers.",
                super::names::py_repr(&self.preset)
            ));
        }
        if !self.is_gpu() && !self.fabric.is_empty() {
            return Err(format!("worker pool {n}: CPU preset must not set 'fabric'"));
        }
        if !self.capacity_block_group.is_empty() && !self.capacity_block_group_name.is_empty() {
            return Err(format!(
                "worker pool {n}: set only one of capacity_block_group or capacity_block_group_name"
            ));
        }
        if self.capacity_mode() == "reserved" && !self.is_gpu() {
            return Err(format!(
                "worker pool {n}: reserved capacity selectors are valid only for GPU worker pools"
            ));
        }
        if self.capacity_mode() == "reserved" && self.preemptible {
            return Err(format!(
                "worker pool {n}: reserved capacity is mutually exclusive with preemptible=true; disable preemptibility to use a capacity block"
            ));
        }
        if self.docker_cache_gib % 93 != 0 {
            return Err(format!(
                "worker pool {n}: docker_cache_gib must be divisible by 93 (got {})",
                self.docker_cache_gib
            ));
        }
        if self.boot_disk_gib < 512 {
            return Err(format!(
                "worker pool {n}: boot_disk_gib must be >= 512 (recipe rule)"
            ));
        }
        Ok(())
    }
}

/// The soperator desired state carried by a fleet target. Identity (tenant, project, region,
/// subnet) is owned by the fleet envelope and never set here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoperatorSpec {
    pub name: String,
    pub system_min_size: i64,
    pub system_max_size: Option<i64>,
    pub system_preset: Option<String>,
    pub controller_preset: Option<String>,
    pub accounting_preset: Option<String>,
    pub login_preset: String,
    pub workers: Vec<WorkerPoolSpec>,
    pub accounting: bool,
    pub telemetry: bool,
    pub use_default_apparmor_profile: bool,
    pub jail_size_gib: i64,
    pub slurm_operator_version: String,
    pub k8s_version: String,
    pub node_group_version: String,
    pub root_login_ssh_public_key: String,
    pub ssh_public_keys: Vec<String>,
    pub slurm_rest_enabled: Option<bool>,
}

impl SoperatorSpec {
    pub fn effective_system_max_size(&self) -> i64 {
        self.system_max_size
            .unwrap_or_else(|| self.system_min_size.max(24))
    }

    pub fn reservation_preflight_required(&self) -> bool {
        self.workers.iter().any(|w| w.capacity_mode() == "reserved")
    }

    fn sizing_tier(&self) -> &'static str {
        let total: i64 = self.workers.iter().map(|w| w.size).sum();
        match total {
            t if t <= 10 => "XS",
            t if t <= 100 => "S",
            t if t <= 500 => "M",
            t if t <= 2000 => "L",
            _ => "XL",
        }
    }

    /// The reference `SoperatorSpec.validate`, message for message.
    pub fn validate(&self) -> Result<(), String> {
        let n = &self.name;
        if n.is_empty() || !n.replace('-', "").chars().all(char::is_alphanumeric) {
            return Err(format!(
                "cluster name must be alphanumeric/dash: {}",
                super::names::py_repr(n)
            ));
        }
        if self.system_min_size < 3 {
            return Err("system_min_size must be >= 3 (recipe rule)".into());
        }
        if self.effective_system_max_size() < self.system_min_size {
            return Err("control_plane.system.max_size must be >= min_size".into());
        }
        if self.workers.is_empty() {
            return Err("at least one worker pool is required".into());
        }
        if self.k8s_version.is_empty() || self.node_group_version.is_empty() {
            return Err("k8s_version and node_group_version must both be non-empty".into());
        }
        let v = &self.slurm_operator_version;
        let semver = {
            let parts: Vec<&str> = v.split('.').collect();
            parts.len() == 3
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                && !parts[0].starts_with('0')
        };
        if !semver {
            return Err(
                "slurm_operator_version must be an explicit semantic version such as '4.1.6'"
                    .into(),
            );
        }
        if v == "4.1.0" {
            return Err("slurm_operator_version 4.1.0 is no longer verified; replace it with 4.1.6 for the default unconfined Enroot/Pyxis setup. Version 4.1.7 is accepted only with use_default_apparmor_profile=true after separately validating that profile on the nodes; 4.1.0 is not safe to re-enable".into());
        }
        if v != "4.1.6" && v != "4.1.7" {
            return Err("slurm_operator_version is outside the pinned runtime contract; use 4.1.6 for the default unconfined Enroot/Pyxis setup; verified overrides are: 4.1.6, 4.1.7 (4.1.7 requires use_default_apparmor_profile=true)".into());
        }
        if !self.use_default_apparmor_profile && v != DEFAULT_SLURM_OPERATOR_VERSION {
            return Err("the unconfined Enroot/Pyxis user-namespace override is verified only with slurm_operator_version 4.1.6; use that version or explicitly enable use_default_apparmor_profile for a separately validated chart".into());
        }
        if !self.root_login_ssh_public_key.is_empty() && !self.ssh_public_keys.is_empty() {
            return Err(
                "set only root_login_ssh_public_key; ssh_public_keys is its legacy alias".into(),
            );
        }
        if self.ssh_public_keys.len() > 1 {
            return Err("ssh_public_keys accepts exactly one root-login public-key record; use root_login_ssh_public_key".into());
        }
        let key = if self.root_login_ssh_public_key.is_empty() {
            self.ssh_public_keys.first().cloned().unwrap_or_default()
        } else {
            self.root_login_ssh_public_key.clone()
        };
        if !key.is_empty() {
            validate_ssh_public_key_record(&key)?;
        }
        let mut seen = std::collections::HashSet::new();
        for pool in &self.workers {
            pool.validate()?;
            if !seen.insert(pool.name.as_str()) {
                return Err(format!("duplicate worker pool name: {}", pool.name));
            }
        }
        let tier = self.sizing_tier();
        let roles: [(&str, Option<&str>); 4] = [
            ("system", self.system_preset.as_deref()),
            ("controller", self.controller_preset.as_deref()),
            (
                "accounting",
                self.accounting_preset
                    .as_deref()
                    .filter(|_| self.accounting),
            ),
            ("login", Some(self.login_preset.as_str())),
        ];
        for (role, preset) in roles {
            if let Some(preset) = preset {
                validate_role_preset(role, preset, tier)?;
            }
        }
        if self.slurm_rest_enabled == Some(true) && !self.accounting {
            return Err(format!(
                "slurm_rest_enabled=true requires accounting=true with the pinned Slurm operator {} runtime contract; the verified controller skips REST reconciliation without an accounting database. GPU creation checks do not require accounting because NPA runs them directly through the login-node jail",
                self.slurm_operator_version
            ));
        }
        Ok(())
    }
}

fn min_preset(role: &str, tier: &str) -> &'static str {
    match (role, tier) {
        ("system", "L") => "32vcpu-128gb",
        ("system", "XL") => "64vcpu-256gb",
        ("system", _) | ("controller", _) | ("login", _) => "16vcpu-64gb",
        ("accounting", "L") => "16vcpu-64gb",
        ("accounting", "XL") => "32vcpu-128gb",
        _ => "8vcpu-32gb",
    }
}

fn rank(preset: &str) -> Option<u32> {
    CPU_D3_PRESET_RANK
        .iter()
        .find(|(p, _)| *p == preset)
        .map(|(_, r)| *r)
}

fn validate_role_preset(role: &str, preset: &str, tier: &str) -> Result<(), String> {
    let Some(have) = rank(preset) else {
        let accepted: Vec<&str> = CPU_D3_PRESET_RANK.iter().map(|(p, _)| *p).collect();
        return Err(format!(
            "control_plane.{role}.preset {} is not a supported cpu-d3 preset; expected one of: {}",
            super::names::py_repr(preset),
            accepted.join(", ")
        ));
    };
    let required = min_preset(role, tier);
    if have < rank(required).unwrap_or(0) {
        return Err(format!(
            "control_plane.{role}.preset {} is insufficient for {tier} sizing ({role} requires at least {required}); omit the preset to use the pinned upstream sizing tier",
            super::names::py_repr(preset)
        ));
    }
    Ok(())
}

fn validate_ssh_public_key_record(key: &str) -> Result<(), String> {
    let lines: Vec<&str> = key.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() != 1 {
        return Err("root login SSH key must be exactly one non-empty public-key record".into());
    }
    let parts: Vec<&str> = lines[0].split_whitespace().collect();
    const TYPES: &[&str] = &[
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    ];
    if parts.len() < 2 || !TYPES.contains(&parts[0]) {
        return Err("root login SSH key must start with a supported OpenSSH key type and contain one base64 key blob".into());
    }
    let blob = parts[1];
    let valid = blob.len().is_multiple_of(4)
        && blob
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
    if !valid {
        return Err("root login SSH key has an invalid base64 blob".into());
    }
    if blob.trim_end_matches('=').is_empty() {
        return Err("root login SSH key has an empty key blob".into());
    }
    Ok(())
}

fn get<'n>(entries: &'n [Entry], key: &str) -> Option<&'n Node> {
    entries.iter().find(|e| e.key == key).map(|e| &e.value)
}

fn unknown(entries: &[Entry], allowed: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = entries
        .iter()
        .filter(|e| !allowed.contains(&e.key.as_str()))
        .map(|e| e.key.clone())
        .collect();
    out.sort();
    out
}

/// `_soperator_cluster_from` + the soperator `spec_from_mapping`: key checks, identity guard,
/// typed fields. Semantic validation is [`SoperatorSpec::validate`].
pub(crate) fn from_entries(
    r: &Reader<'_>,
    mapping: &[Entry],
    name: &str,
    pos: Pos,
    path: &str,
) -> Result<SoperatorSpec, SpecError> {
    let cluster = super::names::py_repr(name);
    let fail = |at: Pos, p: &str, msg: String| r.error(at, p, format!("cluster {cluster}: {msg}"));

    let mut identity: Vec<&str> = ["tenant_id", "project_id", "region", "subnet_id"]
        .into_iter()
        .filter(|k| {
            get(mapping, k).is_some_and(|n| match &n.value {
                Value::Str(s) => !s.trim().is_empty(),
                Value::Null => false,
                _ => n.is_truthy(),
            })
        })
        .collect();
    identity.sort();
    if !identity.is_empty() {
        return Err(fail(
            pos,
            path,
            format!(
                "fleet soperator configuration must not set target identity field(s) {}; use the fleet/project envelope",
                identity.join(", ")
            ),
        ));
    }
    let extra = unknown(mapping, ALLOWED);
    if !extra.is_empty() {
        return Err(fail(
            pos,
            path,
            format!("unsupported soperator field(s): {}", extra.join(", ")),
        ));
    }

    let workers_node = get(mapping, "workers");
    let worker_nodes: Vec<&Node> = match workers_node.map(|n| &n.value) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Seq(items)) => items.iter().collect(),
        Some(_) => {
            let n = workers_node.expect("checked");
            return Err(fail(
                n.pos,
                &join(path, "workers"),
                "workers must be a list".into(),
            ));
        }
    };
    for (i, w) in worker_nodes.iter().enumerate() {
        if let Some(entries) = w.as_map() {
            let extra = unknown(entries, WORKER_ALLOWED);
            if !extra.is_empty() {
                return Err(fail(
                    w.pos,
                    &format!("{path}.workers[{i}]"),
                    format!(
                        "soperator.workers[{i}] has unsupported field(s): {}",
                        extra.join(", ")
                    ),
                ));
            }
        }
    }

    let control_node = get(mapping, "control_plane");
    let control: Vec<Entry> = match control_node {
        None => Vec::new(),
        Some(n) if !n.is_truthy() => Vec::new(),
        Some(n) => match n.as_map() {
            Some(e) => e.to_vec(),
            None => {
                return Err(fail(
                    n.pos,
                    &join(path, "control_plane"),
                    "soperator.control_plane must be a mapping".into(),
                ));
            }
        },
    };
    let extra = unknown(&control, &["system", "controller", "accounting", "login"]);
    if !extra.is_empty() {
        return Err(fail(
            control_node.map_or(pos, |n| n.pos),
            &join(path, "control_plane"),
            format!(
                "soperator.control_plane has unsupported field(s): {}",
                extra.join(", ")
            ),
        ));
    }
    for e in &control {
        let rpath = format!("{path}.control_plane.{}", e.key);
        let Some(role_entries) = e.value.as_map() else {
            return Err(fail(
                e.value.pos,
                &rpath,
                format!("soperator.control_plane.{} must be a mapping", e.key),
            ));
        };
        let allowed: &[&str] = if e.key == "system" {
            &["preset", "min_size", "max_size"]
        } else {
            &["preset"]
        };
        let extra = unknown(role_entries, allowed);
        if !extra.is_empty() {
            return Err(fail(
                e.value.pos,
                &rpath,
                format!(
                    "soperator.control_plane.{} has unsupported field(s): {}",
                    e.key,
                    extra.join(", ")
                ),
            ));
        }
    }
    let embedded = r.string(get(mapping, "name"), &join(path, "name"), "", "")?;
    if !embedded.is_empty() && embedded != name {
        return Err(fail(
            get(mapping, "name").map_or(pos, |n| n.pos),
            &join(path, "name"),
            format!(
                "soperator.name {} must match the fleet target name",
                super::names::py_repr(&embedded)
            ),
        ));
    }

    let mut workers = Vec::with_capacity(worker_nodes.len());
    for (i, w) in worker_nodes.iter().enumerate() {
        let wpath = format!("{path}.workers[{i}]");
        let Some(e) = w.as_map() else {
            return Err(fail(
                w.pos,
                &wpath,
                "each worker pool must be a mapping".into(),
            ));
        };
        let f = |k: &str| join(&wpath, k);
        workers.push(WorkerPoolSpec {
            name: r.string(get(e, "name"), &f("name"), "", "")?,
            platform: r.string(get(e, "platform"), &f("platform"), "cpu-d3", "")?,
            preset: r.string(get(e, "preset"), &f("preset"), "8vcpu-32gb", "")?,
            size: r.integer(get(e, "size"), &f("size"), 1, None)?,
            boot_disk_gib: r.integer(get(e, "boot_disk_gib"), &f("boot_disk_gib"), 512, None)?,
            fabric: r.string(get(e, "fabric"), &f("fabric"), "", "")?,
            preemptible: r.boolean(get(e, "preemptible"), &f("preemptible"), false)?,
            docker_cache: r.boolean(get(e, "docker_cache"), &f("docker_cache"), false)?,
            docker_cache_gib: r.integer(
                get(e, "docker_cache_gib"),
                &f("docker_cache_gib"),
                372,
                None,
            )?,
            docker_cache_disk_type: r.string(
                get(e, "docker_cache_disk_type"),
                &f("docker_cache_disk_type"),
                "NETWORK_SSD_IO_M3",
                "",
            )?,
            capacity_block_group: r
                .string(
                    get(e, "capacity_block_group"),
                    &f("capacity_block_group"),
                    "",
                    "",
                )?
                .trim()
                .to_string(),
            capacity_block_group_name: r
                .string(
                    get(e, "capacity_block_group_name"),
                    &f("capacity_block_group_name"),
                    "",
                    "",
                )?
                .trim()
                .to_string(),
        });
    }

    let role = |key: &str| {
        control
            .iter()
            .find(|e| e.key == key)
            .and_then(|e| e.value.as_map())
            .unwrap_or(&[])
    };
    let cpath = |role: &str, k: &str| format!("{path}.control_plane.{role}.{k}");
    let opt_preset = |role_name: &str| -> Result<Option<String>, SpecError> {
        match get(role(role_name), "preset") {
            None => Ok(None),
            Some(n) if n.is_null() => Ok(None),
            Some(n) => r
                .string(Some(n), &cpath(role_name, "preset"), "", "")
                .map(Some),
        }
    };
    let ssh_keys = match get(mapping, "ssh_public_keys") {
        None => Vec::new(),
        Some(n) if n.is_null() => Vec::new(),
        Some(n) => match &n.value {
            Value::Seq(items) => items
                .iter()
                .enumerate()
                .map(|(i, k)| r.string(Some(k), &format!("{path}.ssh_public_keys[{i}]"), "", ""))
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(fail(
                    n.pos,
                    &join(path, "ssh_public_keys"),
                    "ssh_public_keys must be a list".into(),
                ));
            }
        },
    };
    let slurm_rest_enabled = match get(mapping, "slurm_rest_enabled") {
        None => None,
        Some(n) if n.is_null() => None,
        Some(Node {
            value: Value::Bool(b),
            ..
        }) => Some(*b),
        Some(n) => {
            return Err(fail(
                n.pos,
                &join(path, "slurm_rest_enabled"),
                "slurm_rest_enabled must be a boolean when set".into(),
            ));
        }
    };
    let system_max = match get(role("system"), "max_size") {
        None => None,
        Some(n) if n.is_null() => None,
        Some(n) => Some(r.integer(Some(n), &cpath("system", "max_size"), 0, None)?),
    };
    Ok(SoperatorSpec {
        name: name.to_string(),
        system_min_size: r.integer(
            get(role("system"), "min_size"),
            &cpath("system", "min_size"),
            3,
            None,
        )?,
        system_max_size: system_max,
        system_preset: opt_preset("system")?,
        controller_preset: opt_preset("controller")?,
        accounting_preset: opt_preset("accounting")?,
        login_preset: r.string(
            get(role("login"), "preset"),
            &cpath("login", "preset"),
            "16vcpu-64gb",
            "",
        )?,
        workers,
        accounting: r.boolean(get(mapping, "accounting"), &join(path, "accounting"), false)?,
        telemetry: r.boolean(get(mapping, "telemetry"), &join(path, "telemetry"), false)?,
        use_default_apparmor_profile: r.boolean(
            get(mapping, "use_default_apparmor_profile"),
            &join(path, "use_default_apparmor_profile"),
            false,
        )?,
        jail_size_gib: r.integer(
            get(mapping, "jail_size_gib"),
            &join(path, "jail_size_gib"),
            512,
            None,
        )?,
        slurm_operator_version: r.string(
            get(mapping, "slurm_operator_version"),
            &join(path, "slurm_operator_version"),
            DEFAULT_SLURM_OPERATOR_VERSION,
            DEFAULT_SLURM_OPERATOR_VERSION,
        )?,
        k8s_version: r.string(
            get(mapping, "k8s_version"),
            &join(path, "k8s_version"),
            DEFAULT_K8S_VERSION,
            "",
        )?,
        node_group_version: r.string(
            get(mapping, "node_group_version"),
            &join(path, "node_group_version"),
            DEFAULT_NODE_GROUP_VERSION,
            "",
        )?,
        root_login_ssh_public_key: r.string(
            get(mapping, "root_login_ssh_public_key"),
            &join(path, "root_login_ssh_public_key"),
            "",
            "",
        )?,
        ssh_public_keys: ssh_keys,
        slurm_rest_enabled,
    })
}
