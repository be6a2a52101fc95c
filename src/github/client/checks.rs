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
    pub async fn publish_check_run(
        &self,
        run: &CheckRunPayload,
    ) -> Result<PublishedCheckRun, ClientError> {
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

    /// Creates the run; after an unknown outcome, looks for it before creating again. The id,
    /// and how many requests that took.
    async fn create_check_run_once(
        &self,
        run: &CheckRunPayload,
        body: &Value,
    ) -> Result<(u64, usize), ClientError> {
        match self.create_check_run(body).await {
            Ok(id) => Ok((id, 1)),
            Err(ClientError::Ambiguous { .. }) => match self.find_check_run(run).await? {
                Some(id) => {
                    // The first create did land: bring it to this payload's first batch.
                    self.update_check_run(id, body).await?;
                    Ok((id, 3))
                }
                None => Ok((self.create_check_run(body).await?, 3)),
            },
            Err(e) => Err(e),
        }
    }

    async fn create_check_run(&self, body: &Value) -> Result<u64, ClientError> {
        #[derive(Deserialize)]
        struct Created {
            id: u64,
        }
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
        Ok(decode::<Created>(op, &answer.body)?.id)
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

    /// A run on the head commit with this name and external id, made by any App (the
    /// installation token only sees its own App's runs as writable, which is what matters).
    async fn find_check_run(&self, run: &CheckRunPayload) -> Result<Option<u64>, ClientError> {
        #[derive(Deserialize)]
        struct Run {
            id: u64,
            external_id: Option<String>,
        }
        #[derive(Deserialize)]
        struct Runs {
            check_runs: Vec<Run>,
        }
        let runs: Runs = self
            .client
            .get_json(
                "checks/list-for-ref",
                self.installation_id,
                &self.repo_path(&format!("/commits/{}/check-runs", seg(&run.head_sha))),
                vec![
                    ("check_name", run.name.clone()),
                    ("filter", "latest".to_string()),
                ],
            )
            .await?;
        Ok(runs
            .check_runs
            .into_iter()
            .find(|r| r.external_id == run.external_id)
            .map(|r| r.id))
    }
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
        };
        let v = serde_json::to_value(&run).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "fleet/privacy", "head_sha": "a".repeat(40),
                "conclusion": "skipped", "output": {"title": "t", "summary": "s"}})
        );
    }
}
