//! Starting the simulator: a fresh world from its seed, or the state a previous run saved;
//! and saving the state after every change, so a restart resumes the same cloud.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use prost::Message;
use tonic::Status;

use super::Core;
use super::charging::{block_usage_state, quota_usage_state};
use crate::cloud::nid;
use crate::cloud::proto::fleetbot::sim::v1::SimState;
use crate::sim::world::World;

impl Core {
    /// Builds the world, or restores it from `state_file` when that exists.
    pub fn new(world: World, state_file: Option<PathBuf>) -> Result<Core, String> {
        let tenant_id = nid::make(
            "tenant",
            "eu-north1",
            &format!("{}/{}", world.name, world.tenant_name),
        );
        let mut core = Core {
            world,
            state: SimState::default(),
            tenant_id,
            state_file,
            persistence_deferred: false,
            unsaved: Default::default(),
            issued_tokens: HashMap::new(),
            kube_api: None,
            s3_api: None,
            generation: 0,
            kube_presented: None,
            indexes: Default::default(),
            touched: Default::default(),
        };
        match core.state_file.clone() {
            Some(path) if path.exists() => {
                core.state = restore(&path)?;
                core.indexes.forget_all();
                core.normalize_usage_states();
            }
            _ => {
                core.seed()?;
                core.persist().map_err(|e| e.message().to_string())?;
            }
        }
        Ok(core)
    }

    /// State written before usage states followed usage kept `USED` at zero, which preflight
    /// rightly refuses as evidence; restored state is brought in line.
    fn normalize_usage_states(&mut self) {
        for a in &mut self.state.quota_allowances {
            if let Some(status) = a.status.as_mut() {
                status.usage_state = quota_usage_state(status.usage);
            }
        }
        for b in &mut self.state.capacity_block_groups {
            if let Some(status) = b.status.as_mut() {
                status.usage_state = block_usage_state(status.usage);
            }
        }
    }

    /// Saves the state after a change: at once (every acknowledged change survives a kill),
    /// or, when deferred ([`Core::defer_persistence`]), at the next [`Core::flush`].
    pub fn persist(&self) -> Result<(), Status> {
        if self.state_file.is_none() {
            return Ok(());
        }
        if self.persistence_deferred {
            self.unsaved
                .store(true, std::sync::atomic::Ordering::Relaxed);
            return Ok(());
        }
        self.write_state()
    }

    /// Writes what a deferred persistence has not yet written.
    pub fn flush(&self) -> Result<(), Status> {
        if self
            .unsaved
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            self.write_state()?;
        }
        Ok(())
    }

    /// The embedded simulator lives and dies with its command, so its state need not be
    /// written at every change (at a thousand clusters that rewrote megabytes per call): it is
    /// written by a flusher every moment and when the simulator stops.
    pub fn defer_persistence(&mut self) {
        self.persistence_deferred = true;
    }

    /// Writes the state atomically (temporary file, then rename), the user's alone.
    fn write_state(&self) -> Result<(), Status> {
        let Some(path) = &self.state_file else {
            return Ok(());
        };
        let write = || -> std::io::Result<()> {
            if let Some(dir) = path.parent() {
                crate::store::private::dir(dir)?;
            }
            crate::store::private::write(path, &self.state.encode_to_vec())
        };
        write().map_err(|e| Status::internal(format!("simulator cannot save its state: {e}")))
    }
}

fn restore(path: &Path) -> Result<SimState, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read simulator state {}: {e}", path.display()))?;
    SimState::decode(bytes.as_slice()).map_err(|_| {
        format!(
            "simulator state {} is unreadable; refusing to start on a world it cannot prove",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::proto::nebius::quotas::v1 as quotas;

    #[test]
    fn restored_state_reports_usage_states_that_follow_usage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sim.state");
        let world = World::from_yaml(
            "name: keys\nregions: [eu-north1]\nquotas: {eu-north1: {compute.disk.count: 5}}\n",
        )
        .unwrap();
        let mut core = Core::new(world.clone(), Some(path.clone())).unwrap();
        // As an older simulator left it: usage released, state still USED.
        let status = core.state.quota_allowances[0].status.as_mut().unwrap();
        status.usage = 0;
        status.usage_state = quotas::quota_allowance_status::UsageState::Used as i32;
        core.persist().unwrap();
        let restored = Core::new(world, Some(path)).unwrap();
        assert_eq!(
            restored.state.quota_allowances[0]
                .status
                .as_ref()
                .unwrap()
                .usage_state,
            quotas::quota_allowance_status::UsageState::NotUsed as i32
        );
    }
}
