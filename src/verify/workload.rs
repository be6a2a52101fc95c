//! The objects one verification run owns in a cluster, through kube-rs: created and recorded
//! by name and UID, watched until they end (a pod that never starts, dies, is deleted or is
//! replaced by someone else ends as that, never as a pass), and deleted at the end with a UID
//! precondition and foreground propagation, their absence then proven. An object with the same
//! name but another UID is not this run's and is never deleted.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use kube::Client;
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, PostParams, Preconditions, PropagationPolicy,
};

use super::storage_report::Category;

/// What a pod of the run is for; cleanup failures are named by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// The host phase and the path checks.
    Probe,
    /// The shared phase, on the claim.
    ClaimProbe,
}

#[derive(Debug, Clone)]
struct Created {
    name: String,
    uid: String,
    purpose: Option<Purpose>,
}

/// How a pod of the run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodEnd {
    /// It ran to completion: its log.
    Succeeded(String),
    Failed(String),
    /// It was not running before the start deadline.
    NeverStarted,
    /// It ran past the phase deadline.
    TimedOut,
    /// Someone deleted it.
    Gone,
    /// An object of its name with another UID took its place.
    Replaced,
}

/// A finished pod, as the API last described it.
#[derive(Debug, Clone)]
pub struct PodRun {
    pub end: PodEnd,
    /// Where it ran.
    pub node_name: Option<String>,
    /// The image the runtime resolved, by digest.
    pub image_id: String,
    pub pod: Option<Pod>,
}

/// What cleanup did and proved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleanup {
    pub pods_removed: usize,
    pub claims_removed: usize,
    pub failures: BTreeSet<Category>,
    /// Private: for the receipt.
    pub notes: Vec<String>,
}

/// The run's objects in one namespace.
pub struct Workload {
    client: Client,
    namespace: String,
    selector: String,
    pods: Vec<Created>,
    claims: Vec<Created>,
    /// Volumes bound to the run's claims, which must go with them.
    volumes: Vec<String>,
    pub poll: Duration,
}

fn api_error(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

impl Workload {
    pub fn new(client: Client, namespace: &str, selector: &str) -> Workload {
        Workload {
            client,
            namespace: namespace.to_string(),
            selector: selector.to_string(),
            pods: Vec::new(),
            claims: Vec::new(),
            volumes: Vec::new(),
            poll: Duration::from_millis(250),
        }
    }

    fn pod_api(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn claim_api(&self) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub async fn create_pod(&mut self, pod: &Pod, purpose: Purpose) -> Result<(), String> {
        let made = self
            .pod_api()
            .create(&PostParams::default(), pod)
            .await
            .map_err(|e| format!("creating a probe pod: {e}"))?;
        self.pods.push(Created {
            name: made.metadata.name.unwrap_or_default(),
            uid: made.metadata.uid.unwrap_or_default(),
            purpose: Some(purpose),
        });
        Ok(())
    }

    pub async fn create_claim(&mut self, claim: &PersistentVolumeClaim) -> Result<String, String> {
        let made = self
            .claim_api()
            .create(&PostParams::default(), claim)
            .await
            .map_err(|e| format!("creating the shared claim: {e}"))?;
        let uid = made.metadata.uid.clone().unwrap_or_default();
        self.claims.push(Created {
            name: made.metadata.name.unwrap_or_default(),
            uid: uid.clone(),
            purpose: None,
        });
        Ok(uid)
    }

    fn uid_of(&self, name: &str) -> Option<&str> {
        self.pods
            .iter()
            .chain(&self.claims)
            .find(|c| c.name == name)
            .map(|c| c.uid.as_str())
    }

    /// Waits until every named pod has ended: each must be running by `start` and done by
    /// `total`, both counted from now.
    pub async fn wait_pods(
        &self,
        names: &[String],
        start: Duration,
        total: Duration,
    ) -> Vec<PodRun> {
        let began = Instant::now();
        let api = self.pod_api();
        let mut runs: Vec<Option<PodRun>> = vec![None; names.len()];
        let mut pause = Duration::from_millis(50);
        loop {
            for (i, name) in names.iter().enumerate() {
                if runs[i].is_some() {
                    continue;
                }
                runs[i] = self.look(&api, name, began.elapsed(), start, total).await;
            }
            if runs.iter().all(Option::is_some) {
                return runs.into_iter().flatten().collect();
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(self.poll);
        }
    }

    async fn look(
        &self,
        api: &Api<Pod>,
        name: &str,
        elapsed: Duration,
        start: Duration,
        total: Duration,
    ) -> Option<PodRun> {
        let ended = |end: PodEnd, pod: Option<Pod>| {
            let status = pod.as_ref().and_then(|p| p.status.clone());
            Some(PodRun {
                end,
                node_name: pod
                    .as_ref()
                    .and_then(|p| p.spec.as_ref()?.node_name.clone()),
                image_id: status
                    .and_then(|s| s.container_statuses?.first().map(|c| c.image_id.clone()))
                    .unwrap_or_default(),
                pod,
            })
        };
        let pod = match api.get_opt(name).await {
            Ok(Some(pod)) => pod,
            Ok(None) => return ended(PodEnd::Gone, None),
            // A failed read is not an end: look again, until the deadline.
            Err(_) if elapsed < total => return None,
            Err(e) => return ended(PodEnd::Failed(format!("reading the pod: {e}")), None),
        };
        if pod.metadata.uid.as_deref() != self.uid_of(name) {
            return ended(PodEnd::Replaced, Some(pod));
        }
        let status = pod.status.clone().unwrap_or_default();
        match status.phase.as_deref() {
            Some("Succeeded") => {
                let end = match api.logs(name, &LogParams::default()).await {
                    Ok(log) => PodEnd::Succeeded(log),
                    Err(e) => PodEnd::Failed(format!("reading its log: {e}")),
                };
                ended(end, Some(pod))
            }
            Some("Failed") => {
                let message = status.message.unwrap_or_else(|| "the pod failed".into());
                ended(PodEnd::Failed(message), Some(pod))
            }
            Some("Running") if elapsed >= total => ended(PodEnd::TimedOut, Some(pod)),
            Some("Running") => None,
            _ if elapsed >= start => ended(PodEnd::NeverStarted, Some(pod)),
            _ => None,
        }
    }

    /// Waits for the claim to bind; the claim and its volume as then read.
    pub async fn wait_bound(
        &mut self,
        name: &str,
        timeout: Duration,
    ) -> Option<(PersistentVolumeClaim, PersistentVolume)> {
        let began = Instant::now();
        let volumes: Api<PersistentVolume> = Api::all(self.client.clone());
        while began.elapsed() < timeout {
            if let Ok(Some(claim)) = self.claim_api().get_opt(name).await
                && claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
                && let Some(volume) = claim.spec.as_ref().and_then(|s| s.volume_name.clone())
            {
                self.volumes.push(volume.clone());
                if let Ok(Some(pv)) = volumes.get_opt(&volume).await {
                    return Some((claim, pv));
                }
            }
            tokio::time::sleep(self.poll).await;
        }
        None
    }

    /// Deletes every object the run made (pods first, then claims) and proves each absent,
    /// then the claims' volumes; within `timeout`.
    pub async fn cleanup(&mut self, timeout: Duration) -> Cleanup {
        let deadline = Instant::now() + timeout;
        let mut out = Cleanup::default();
        let pods = std::mem::take(&mut self.pods);
        let api = self.pod_api();
        for p in &pods {
            let failed = match p.purpose {
                Some(Purpose::ClaimProbe) => Category::ClaimProbeCleanupFailed,
                _ => Category::ProbeCleanupFailed,
            };
            if self.delete_one(&api, p, failed, deadline, &mut out).await {
                out.pods_removed += 1;
            }
        }
        let claims = std::mem::take(&mut self.claims);
        let api = self.claim_api();
        for c in &claims {
            if self
                .delete_one(&api, c, Category::VolumeCleanupFailed, deadline, &mut out)
                .await
            {
                out.claims_removed += 1;
            }
        }
        let volumes: Api<PersistentVolume> = Api::all(self.client.clone());
        for v in std::mem::take(&mut self.volumes) {
            loop {
                match volumes.get_opt(&v).await {
                    Ok(None) => break,
                    _ if Instant::now() >= deadline => {
                        out.failures.insert(Category::VolumeCleanupFailed);
                        out.notes.push(format!("volume {v} outlived its claim"));
                        break;
                    }
                    _ => tokio::time::sleep(self.poll).await,
                }
            }
        }
        // Nothing with the run's label may be left.
        let params = ListParams::default().labels(&self.selector);
        let left = match (
            self.pod_api().list(&params).await,
            self.claim_api().list(&params).await,
        ) {
            (Ok(p), Ok(c)) => p.items.len() + c.items.len(),
            _ => usize::MAX,
        };
        if left != 0 {
            out.failures.insert(Category::ResourceAbsenceUnverified);
            out.notes.push(if left == usize::MAX {
                "the run's objects could not be listed after cleanup".into()
            } else {
                format!("{left} object(s) with the run's label remain")
            });
        }
        out
    }

    /// Deletes one object by its UID and waits until it is gone; whether it is.
    async fn delete_one<K>(
        &self,
        api: &Api<K>,
        made: &Created,
        failed: Category,
        deadline: Instant,
        out: &mut Cleanup,
    ) -> bool
    where
        K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(made.uid.clone()),
                resource_version: None,
            }),
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        };
        match api.delete(&made.name, &params).await {
            Ok(_) => {}
            Err(e) if api_error(&e) == Some(404) => return true,
            Err(e) if api_error(&e) == Some(409) => {
                out.failures.insert(failed);
                out.failures.insert(Category::OwnershipMismatch);
                out.notes
                    .push(format!("{}: not ours any more ({e})", made.name));
                return false;
            }
            Err(e) => {
                out.failures.insert(failed);
                out.failures.insert(Category::ResourceCleanupFailed);
                out.notes.push(format!("{}: {e}", made.name));
                return false;
            }
        }
        loop {
            match api.get_opt(&made.name).await {
                Ok(None) => return true,
                Ok(Some(o)) if o.meta().uid.as_deref() != Some(made.uid.as_str()) => return true,
                _ if Instant::now() >= deadline => {
                    out.failures.insert(failed);
                    out.failures.insert(Category::ResourceAbsenceUnverified);
                    out.notes.push(format!("{} is still there", made.name));
                    return false;
                }
                _ => tokio::time::sleep(self.poll).await,
            }
        }
    }
}
