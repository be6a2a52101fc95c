//! Check runs: the payload fleetbot publishes, and publishing it in batches of annotations
//! without ever leaving two runs of one name on a commit.

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::paths::seg;
use super::transport::{Repeat, decode};
use super::{ClientError, RepoClient};

/// At most this many annotations per check-run request (GitHub's limit).
pub const MAX_ANNOTATIONS_PER_REQUEST: usize = 50;

/// How a check run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    Skipped,
    ActionRequired,
    Cancelled,
    TimedOut,
}

impl CheckConclusion {
    /// The API's name for it.
    pub fn as_str(&self) -> &'static str {
        match self {
            CheckConclusion::Success => "success",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Neutral => "neutral",
            CheckConclusion::Skipped => "skipped",
            CheckConclusion::ActionRequired => "action_required",
            CheckConclusion::Cancelled => "cancelled",
            CheckConclusion::TimedOut => "timed_out",
        }
    }
}

/// An annotation's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationLevel {
    Notice,
    Warning,
    Failure,
}

/// One annotation on a line of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Annotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Only when `start_line == end_line` (GitHub's rule).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<u32>,
    pub annotation_level: AnnotationLevel,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// A check run's `output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckOutput {
    pub title: String,
    /// At most 65,535 characters.
    pub summary: String,
    /// At most 65,535 characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Any number; the client sends them 50 per request.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub annotations: Vec<Annotation>,
}

/// A button on a check run (`requested_action` comes back with its identifier).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckAction {
    /// At most 20 characters.
    pub label: String,
    /// At most 40 characters.
    pub description: String,
    /// At most 20 characters.
    pub identifier: String,
}

/// At most this many buttons per check run (GitHub's limit).
pub const MAX_CHECK_ACTIONS: usize = 3;

/// A completed check run, as the bot reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckRunPayload {
    pub name: String,
    pub head_sha: String,
    /// Fleetbot's reference (the plan digest); also how a run is found again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    pub conclusion: CheckConclusion,
    pub output: CheckOutput,
    /// Buttons offered with the result (at most [`MAX_CHECK_ACTIONS`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<CheckAction>,
}

/// A check run that is still running: its title and summary say how far it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningCheck {
    pub name: String,
    pub head_sha: String,
    pub external_id: Option<String>,
    pub title: String,
    pub summary: String,
}

/// A check run as GitHub names it: its id and its page (empty when GitHub gave none).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct CheckRunRef {
    pub id: u64,
    #[serde(default)]
    pub html_url: String,
}

/// What publishing a check run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublishedCheckRun {
    pub id: u64,
    /// Requests made (one create, then one update per further batch of 50 annotations).
    pub requests: usize,
}

impl RepoClient {
    /// Creates a completed check run with its first 50 annotations, then adds the rest 50 per
    /// update. If the create's outcome is unknown, an existing run with the same name and
    /// external id on the head commit is used instead of creating a second one.
    ///
    /// The external id is the report's digest, which covers everything the run says: when the
    /// commit's latest run of this name already carries it and has concluded, it is that
    /// same run (a retried job, a repeated `/plan` of an unchanged plan) and nothing is sent.
    pub async fn publish_check_run(
        &self,
        run: &CheckRunPayload,
    ) -> Result<PublishedCheckRun, ClientError> {
        if run.external_id.is_some()
            && let Some(found) = self
                .find_concluded_check_run(&run.name, &run.head_sha, run.external_id.as_deref())
                .await?
        {
            return Ok(PublishedCheckRun {
                id: found,
                requests: 1,
            });
        }
        let mut batches = run.output.annotations.chunks(MAX_ANNOTATIONS_PER_REQUEST);
        let first = batches.next().unwrap_or(&[]);
        let mut body = serde_json::to_value(run).map_err(|e| ClientError::Decode {
            op: "checks/create",
            message: e.to_string(),
        })?;
        body["status"] = Value::from("completed");
        set_annotations(&mut body["output"], first);
        let (id, mut requests) = self.create_check_run_once(run, &body).await?;
        for batch in batches {
            let mut output = serde_json::json!({
                "title": run.output.title,
                "summary": run.output.summary,
            });
            set_annotations(&mut output, batch);
            self.update_check_run(id, &serde_json::json!({ "output": output }))
                .await?;
            requests += 1;
        }
        Ok(PublishedCheckRun { id, requests })
    }

    /// Starts an `in_progress` run and returns its id; when the commit already has a run with
    /// this name and external id (the same request acknowledged before: a retried job, a
    /// redelivery), that run's id is returned and the run is left as it is, so an apply that
    /// already concluded is never shown as queued again.
    pub async fn start_check_run(&self, run: &RunningCheck) -> Result<CheckRunRef, ClientError> {
        if let Some(found) = self
            .find_check_run(&run.name, &run.head_sha, run.external_id.as_deref())
            .await?
        {
            return Ok(found);
        }
        let mut body = serde_json::json!({
            "name": run.name,
            "head_sha": run.head_sha,
            "status": "in_progress",
            "output": { "title": run.title, "summary": run.summary },
        });
        if let Some(id) = &run.external_id {
            body["external_id"] = Value::from(id.as_str());
        }
        Ok(self
            .create_check_run_once_as(&run.name, &run.head_sha, run.external_id.as_deref(), &body)
            .await?
            .0)
    }

    /// Whether this client's App has a run named `name` on `head_sha` (any state): how the
    /// reconcile loop tells a head the App has seen from one whose delivery was lost.
    pub async fn has_own_check_run(&self, name: &str, head_sha: &str) -> Result<bool, ClientError> {
        Ok(!self.latest_runs(name, head_sha).await?.is_empty())
    }

    /// Whether this client's App's latest run named `name` on `head_sha` has concluded: an
    /// acknowledged run still in progress may be one whose job was never queued.
    pub async fn own_check_run_concluded(
        &self,
        name: &str,
        head_sha: &str,
    ) -> Result<bool, ClientError> {
        Ok(self
            .latest_runs(name, head_sha)
            .await?
            .first()
            .is_some_and(|r| r.conclusion.is_some()))
    }

    /// A run kept in place on a commit (`fleet/drift`): the App's latest run of the name on
    /// `run.head_sha` is completed again with `run`'s conclusion and output; only a commit
    /// without one gets a new run.
    pub async fn publish_check_run_in_place(
        &self,
        run: &CheckRunPayload,
    ) -> Result<u64, ClientError> {
        match self.latest_runs(&run.name, &run.head_sha).await?.first() {
            Some(existing) => {
                self.complete_check_run(existing.id, run).await?;
                Ok(existing.id)
            }
            None => Ok(self.publish_check_run(run).await?.id),
        }
    }

    /// Updates a running run's title and summary (progress).
    pub async fn report_progress(
        &self,
        id: u64,
        title: &str,
        summary: &str,
    ) -> Result<(), ClientError> {
        let body = serde_json::json!({
            "status": "in_progress",
            "output": { "title": title, "summary": summary },
        });
        self.update_check_run(id, &body).await
    }

    /// Completes the run `id` with `run`'s conclusion, output and buttons.
    pub async fn complete_check_run(
        &self,
        id: u64,
        run: &CheckRunPayload,
    ) -> Result<(), ClientError> {
        let mut body = serde_json::to_value(run).map_err(|e| ClientError::Decode {
            op: "checks/update",
            message: e.to_string(),
        })?;
        body["status"] = Value::from("completed");
        if let Some(map) = body.as_object_mut() {
            // Name and commit are fixed at creation.
            map.remove("name");
            map.remove("head_sha");
        }
        let mut batches = run.output.annotations.chunks(MAX_ANNOTATIONS_PER_REQUEST);
        set_annotations(&mut body["output"], batches.next().unwrap_or(&[]));
        self.update_check_run(id, &body).await?;
        for batch in batches {
            let mut output = serde_json::json!({
                "title": run.output.title,
                "summary": run.output.summary,
            });
            set_annotations(&mut output, batch);
            self.update_check_run(id, &serde_json::json!({ "output": output }))
                .await?;
        }
        Ok(())
    }

    /// Creates the run; after an unknown outcome, looks for it before creating again. The id,
    /// and how many requests that took.
    async fn create_check_run_once(
        &self,
        run: &CheckRunPayload,
        body: &Value,
    ) -> Result<(u64, usize), ClientError> {
        self.create_check_run_once_as(&run.name, &run.head_sha, run.external_id.as_deref(), body)
            .await
            .map(|(run, requests)| (run.id, requests))
    }

    async fn create_check_run_once_as(
        &self,
        name: &str,
        head_sha: &str,
        external_id: Option<&str>,
        body: &Value,
    ) -> Result<(CheckRunRef, usize), ClientError> {
        match self.create_check_run(body).await {
            Ok(run) => Ok((run, 1)),
            Err(ClientError::Ambiguous { .. }) => {
                match self.find_check_run(name, head_sha, external_id).await? {
                    Some(run) => {
                        // The first create did land: bring it to this payload's first batch.
                        self.update_check_run(run.id, body).await?;
                        Ok((run, 3))
                    }
                    None => Ok((self.create_check_run(body).await?, 3)),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn create_check_run(&self, body: &Value) -> Result<CheckRunRef, ClientError> {
        let op = "checks/create";
        let answer = self
            .write(
                op,
                Method::POST,
                "/check-runs",
                body,
                Repeat::CreatesContent,
            )
            .await?;
        decode::<CheckRunRef>(op, &answer.body)
    }

    /// `PATCH /check-runs/{id}`. Annotations accumulate, so an update that carries some is a
    /// content-creating call.
    async fn update_check_run(&self, id: u64, body: &Value) -> Result<(), ClientError> {
        let adds = body["output"]["annotations"]
            .as_array()
            .is_some_and(|a| !a.is_empty());
        let repeat = if adds {
            Repeat::CreatesContent
        } else {
            Repeat::Safe
        };
        self.write(
            "checks/update",
            Method::PATCH,
            &format!("/check-runs/{id}"),
            body,
            repeat,
        )
        .await?;
        Ok(())
    }

    /// The id of the commit's latest run of this name when it carries `external_id` and has
    /// concluded.
    async fn find_concluded_check_run(
        &self,
        name: &str,
        head_sha: &str,
        external_id: Option<&str>,
    ) -> Result<Option<u64>, ClientError> {
        // `latest` gives the newest run of the name; an older one with this digest is not it.
        Ok(self
            .latest_runs(name, head_sha)
            .await?
            .into_iter()
            .next()
            .filter(|r| r.external_id.as_deref() == external_id && r.conclusion.is_some())
            .map(|r| r.id))
    }

    /// A run on the head commit with this name and external id, made by this client's own
    /// App (another App's run, or a workflow's, is not ours to adopt: GitHub refuses an
    /// update to it).
    async fn find_check_run(
        &self,
        name: &str,
        head_sha: &str,
        external_id: Option<&str>,
    ) -> Result<Option<CheckRunRef>, ClientError> {
        Ok(self
            .latest_runs(name, head_sha)
            .await?
            .into_iter()
            .find(|r| r.external_id.as_deref() == external_id)
            .map(|r| CheckRunRef {
                id: r.id,
                html_url: r.html_url.unwrap_or_default(),
            }))
    }

    /// The commit's latest runs of this name (`filter=latest`, GitHub's default).
    async fn latest_runs(&self, name: &str, head_sha: &str) -> Result<Vec<ListedRun>, ClientError> {
        #[derive(Deserialize)]
        struct Runs {
            check_runs: Vec<ListedRun>,
        }
        let own = self.client.app_identity().await?.slug;
        let runs: Runs = self
            .client
            .get_json(
                "checks/list-for-ref",
                self.installation_id,
                &self.repo_path(&format!("/commits/{}/check-runs", seg(head_sha))),
                vec![
                    ("check_name", name.to_string()),
                    ("filter", "latest".to_string()),
                ],
            )
            .await?;
        Ok(runs
            .check_runs
            .into_iter()
            .filter(|r| r.app.as_ref().is_none_or(|a| a.slug == own))
            .collect())
    }
}

/// A run as `GET /commits/{ref}/check-runs` lists it (what fleetbot reads of it).
#[derive(Deserialize)]
struct ListedRun {
    id: u64,
    /// The App that made it; only its own runs are this client's to adopt or update.
    #[serde(default)]
    app: Option<ListedApp>,
    #[serde(default)]
    html_url: Option<String>,
    external_id: Option<String>,
    #[serde(default)]
    conclusion: Option<String>,
}

#[derive(Deserialize)]
struct ListedApp {
    slug: String,
}

fn set_annotations(output: &mut Value, batch: &[Annotation]) {
    if let Some(map) = output.as_object_mut() {
        if batch.is_empty() {
            map.remove("annotations");
        } else {
            map.insert(
                "annotations".into(),
                serde_json::to_value(batch).unwrap_or_default(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_run_payload_serializes_like_the_api() {
        let run = CheckRunPayload {
            name: "fleet/privacy".into(),
            head_sha: "a".repeat(40),
            external_id: None,
            conclusion: CheckConclusion::Skipped,
            output: CheckOutput {
                title: "t".into(),
                summary: "s".into(),
                text: None,
                annotations: vec![],
            },
            actions: vec![],
        };
        let v = serde_json::to_value(&run).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "fleet/privacy", "head_sha": "a".repeat(40),
                "conclusion": "skipped", "output": {"title": "t", "summary": "s"}})
        );
    }
}
