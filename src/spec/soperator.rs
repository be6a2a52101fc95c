//! The `soperator` backend envelope: Slurm-on-Kubernetes targets, their defaults and rules.

pub const DEFAULT_SLURM_OPERATOR_VERSION: &str = "4.1.6";
pub const DEFAULT_K8S_VERSION: &str = "1.34";
pub const DEFAULT_NODE_GROUP_VERSION: &str = "72";

pub(crate) const ALLOWED: &[&str] = &[
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

pub(crate) const WORKER_ALLOWED: &[&str] = &[
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

    /// A control-plane role's preset: the spec's, else the pinned sizing tier's minimum.
    pub fn role_preset(&self, role: &str) -> String {
        let explicit = match role {
            "system" => self.system_preset.clone(),
            "controller" => self.controller_preset.clone(),
            "accounting" => self.accounting_preset.clone(),
            "login" => Some(self.login_preset.clone()).filter(|p| !p.is_empty()),
            _ => None,
        };
        explicit.unwrap_or_else(|| min_preset(role, self.sizing_tier()).to_string())
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
