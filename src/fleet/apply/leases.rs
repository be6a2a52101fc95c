//! The fleets an apply holds while it changes them: one lease per fleet (its tenant and name,
//! whichever file declares it), all taken before the first mutation, renewed while the apply
//! runs, released when it ends. A lease that cannot be renewed was freed (`/unlock`) or taken
//! over, and the apply stops before its next fleet.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::fleet::backend::{Deploying, fleet_lease_key};
use crate::spec::FleetSpec;
use crate::store::queue::{ms, now_ms};
use crate::store::{DeployStore, Lease, LeaseTake, StoreError};

/// Another apply holds one of the fleets: run again later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// Who holds it, in public words (`#12 at abc1234 (merge)`).
    pub holder: String,
    /// When its lease expires (unix ms), when known.
    pub until: Option<i64>,
}

/// The leases of an apply's fleets, held until [`Held::release`].
pub struct Held {
    state: Arc<dyn DeployStore>,
    leases: Vec<Lease>,
    lost: Arc<AtomicBool>,
    renewing: Option<tokio::task::JoinHandle<()>>,
}

/// Takes the lease of every fleet in `fleets` for `job_id` (run by `holder`) before the first
/// mutation. If one is held elsewhere, frees what was taken and says who holds it; a lease that
/// cannot be read is one not held (fail closed).
pub async fn take(
    deployer: &Deploying<'_>,
    job_id: &str,
    holder: &str,
    fleets: &[&FleetSpec],
) -> Result<Held, Busy> {
    let mut held = Held {
        state: deployer.store.clone(),
        leases: Vec::new(),
        lost: Arc::new(AtomicBool::new(false)),
        renewing: None,
    };
    let ttl = ms(deployer.lease);
    for fleet in fleets {
        let key = fleet_lease_key(deployer.tenant_id, &fleet.name);
        if held.leases.iter().any(|l| l.fleet_key == key) {
            continue;
        }
        match deployer
            .store
            .take_lease(&key, job_id, holder, now_ms(), ttl)
            .await
        {
            Ok(LeaseTake::Acquired(lease)) => held.leases.push(lease),
            other => {
                held.release().await;
                return Err(match other {
                    Ok(LeaseTake::Held(lease)) => Busy {
                        holder: lease.holder,
                        until: Some(lease.expires_at),
                    },
                    _ => Busy {
                        holder: "an apply whose lock could not be read".into(),
                        until: None,
                    },
                });
            }
        }
    }
    Ok(held)
}

/// Frees the lease of fleet `name` whoever holds it (`/unlock`): the holder stops before its
/// next fleet. Returns the freed lease, or `None` when the fleet was not locked.
pub async fn unlock(deployer: &Deploying<'_>, name: &str) -> Result<Option<Lease>, StoreError> {
    let key = fleet_lease_key(deployer.tenant_id, name);
    deployer.store.break_lease(&key).await
}

/// Whether `claimant` is the one to acknowledge apply `job_id` (start its check run): two
/// deliveries of one request (a merge event and the push of its merge commit, or a redelivery)
/// may reach two replicas at once, and only the first may. The same claimant may claim again
/// (its job's retries). A lease that cannot be read says yes: a duplicate check run is better
/// than a lost apply, and the job id still makes the apply itself run once.
pub async fn acknowledge_once(deployer: &Deploying<'_>, job_id: &str, claimant: &str) -> bool {
    const ACK_LEASE: Duration = Duration::from_secs(10 * 60);
    let key = format!("ack:{job_id}");
    match deployer
        .store
        .take_lease(
            &key,
            claimant,
            "acknowledging an apply",
            now_ms(),
            ms(ACK_LEASE),
        )
        .await
    {
        Ok(LeaseTake::Acquired(_)) => true,
        Ok(LeaseTake::Held(_)) => false,
        Err(e) => {
            tracing::warn!("cannot take the acknowledgement lease: {e}");
            true
        }
    }
}

impl Held {
    /// Renews the leases every third of `ttl` until they are released; one that cannot be
    /// renewed sets [`Held::lost`].
    pub fn keep_alive(&mut self, ttl: Duration) {
        let (state, leases, lost) = (self.state.clone(), self.leases.clone(), self.lost.clone());
        self.renewing = Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval((ttl / 3).max(Duration::from_millis(100)));
            tick.tick().await;
            loop {
                tick.tick().await;
                for lease in &leases {
                    match state.renew_lease(lease, now_ms() + ms(ttl)).await {
                        Ok(true) => {}
                        Ok(false) => {
                            tracing::error!(holder = %lease.holder, "a fleet lease was lost while applying (freed by /unlock, or expired)");
                            lost.store(true, Ordering::SeqCst);
                        }
                        Err(e) => tracing::warn!("cannot renew a fleet lease: {e}"),
                    }
                }
            }
        }));
    }

    /// Set once a lease was lost: nothing more may be applied under them.
    pub fn lost(&self) -> Arc<AtomicBool> {
        self.lost.clone()
    }

    /// Stops renewing and frees the leases.
    pub async fn release(self) {
        if let Some(renewing) = &self.renewing {
            renewing.abort();
        }
        for lease in &self.leases {
            if let Err(e) = self.state.release_lease(lease).await {
                tracing::warn!("cannot release a fleet lease: {e}");
            }
        }
    }
}
