//! Webhook payloads shaped like GitHub's: the objects GitHub nests (repository, users, the
//! pull request with both refs) with their many URL fields, then padding in a free-text field
//! up to the size GitHub's own examples have (`@octokit/webhooks-examples`: `pull_request`
//! about 24 KB, `issue_comment` about 14 KB, `check_run` about 10 KB).
//!
//! The shape matters because a receiver's cost is in parsing: a few hundred small fields cost
//! more to skip than one long string of the same size.

use serde_json::{Map, Value, json};

pub const OWNER: &str = "octo-org";
pub const NAME: &str = "fleet-config";
pub const INSTALLATION: u64 = 77;
const REPO_ID: u64 = 186_853_002;
const OWNER_ID: u64 = 21_031_067;

/// The default size of a payload of `event`, as GitHub's examples measure.
pub fn default_size(event: &str) -> usize {
    match event {
        "pull_request" => 24_000,
        "issue_comment" => 14_000,
        "check_run" => 10_000,
        _ => 0,
    }
}

/// A commit SHA made from a number (distinct numbers, distinct SHAs).
pub fn sha(n: u64) -> String {
    format!("{:040x}", n.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

fn time(seconds_after: u64) -> String {
    // A fixed day keeps the payloads reproducible; receivers do not read these times.
    let s = seconds_after % 86_400;
    format!(
        "2025-05-15T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A user (or organisation) object as GitHub nests it.
fn user(login: &str, id: u64, kind: &str) -> Value {
    let api = format!("https://api.github.com/users/{login}");
    json!({
        "login": login,
        "id": id,
        "node_id": format!("MDQ6VXNlcj{id}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": kind,
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// The repository object: every `*_url` template GitHub lists, then its settings.
fn repository() -> Value {
    let full = format!("{OWNER}/{NAME}");
    let api = format!("https://api.github.com/repos/{full}");
    let mut r = Map::new();
    r.insert("id".into(), json!(REPO_ID));
    r.insert("node_id".into(), json!("R_kgDOLoadTest"));
    r.insert("name".into(), json!(NAME));
    r.insert("full_name".into(), json!(full));
    r.insert("private".into(), json!(true));
    r.insert("owner".into(), user(OWNER, OWNER_ID, "Organization"));
    r.insert(
        "html_url".into(),
        json!(format!("https://github.com/{full}")),
    );
    r.insert(
        "description".into(),
        json!("Declarative fleets of managed Kubernetes clusters"),
    );
    r.insert("fork".into(), json!(false));
    r.insert("url".into(), json!(api));
    for (field, tail) in [
        ("forks_url", "/forks"),
        ("keys_url", "/keys{/key_id}"),
        ("collaborators_url", "/collaborators{/collaborator}"),
        ("teams_url", "/teams"),
        ("hooks_url", "/hooks"),
        ("issue_events_url", "/issues/events{/number}"),
        ("events_url", "/events"),
        ("assignees_url", "/assignees{/user}"),
        ("branches_url", "/branches{/branch}"),
        ("tags_url", "/tags"),
        ("blobs_url", "/git/blobs{/sha}"),
        ("git_tags_url", "/git/tags{/sha}"),
        ("git_refs_url", "/git/refs{/sha}"),
        ("trees_url", "/git/trees{/sha}"),
        ("statuses_url", "/statuses/{sha}"),
        ("languages_url", "/languages"),
        ("stargazers_url", "/stargazers"),
        ("contributors_url", "/contributors"),
        ("subscribers_url", "/subscribers"),
        ("subscription_url", "/subscription"),
        ("commits_url", "/commits{/sha}"),
        ("git_commits_url", "/git/commits{/sha}"),
        ("comments_url", "/comments{/number}"),
        ("issue_comment_url", "/issues/comments{/number}"),
        ("contents_url", "/contents/{+path}"),
        ("compare_url", "/compare/{base}...{head}"),
        ("merges_url", "/merges"),
        ("archive_url", "/{archive_format}{/ref}"),
        ("downloads_url", "/downloads"),
        ("issues_url", "/issues{/number}"),
        ("pulls_url", "/pulls{/number}"),
        ("milestones_url", "/milestones{/number}"),
        (
            "notifications_url",
            "/notifications{?since,all,participating}",
        ),
        ("labels_url", "/labels{/name}"),
        ("releases_url", "/releases{/id}"),
        ("deployments_url", "/deployments"),
    ] {
        r.insert(field.into(), json!(format!("{api}{tail}")));
    }
    for (field, value) in [
        ("created_at", json!(time(0))),
        ("updated_at", json!(time(60))),
        ("pushed_at", json!(time(120))),
        ("git_url", json!(format!("git://github.com/{full}.git"))),
        ("ssh_url", json!(format!("git@github.com:{full}.git"))),
        ("clone_url", json!(format!("https://github.com/{full}.git"))),
        ("svn_url", json!(format!("https://github.com/{full}"))),
        ("homepage", Value::Null),
        ("size", json!(1_204)),
        ("stargazers_count", json!(0)),
        ("watchers_count", json!(0)),
        ("language", Value::Null),
        ("has_issues", json!(true)),
        ("has_projects", json!(false)),
        ("has_downloads", json!(true)),
        ("has_wiki", json!(false)),
        ("has_pages", json!(false)),
        ("has_discussions", json!(false)),
        ("forks_count", json!(0)),
        ("mirror_url", Value::Null),
        ("archived", json!(false)),
        ("disabled", json!(false)),
        ("open_issues_count", json!(12)),
        ("license", Value::Null),
        ("allow_forking", json!(false)),
        ("is_template", json!(false)),
        ("web_commit_signoff_required", json!(false)),
        ("topics", json!([])),
        ("visibility", json!("private")),
        ("forks", json!(0)),
        ("open_issues", json!(12)),
        ("watchers", json!(0)),
        ("default_branch", json!("main")),
        ("custom_properties", json!({})),
    ] {
        r.insert(field.into(), value);
    }
    Value::Object(r)
}

fn git_ref(label_ref: &str, sha: &str, owner: &Value, repo: &Value) -> Value {
    json!({
        "label": format!("{OWNER}:{label_ref}"),
        "ref": label_ref,
        "sha": sha,
        "user": owner,
        "repo": repo,
    })
}

/// The `pull_request` object of pull request `number` at head `head_sha`.
fn pull_request(number: u64, head_sha: &str, author: &Value, repo: &Value) -> Value {
    let full = format!("{OWNER}/{NAME}");
    let api = format!("https://api.github.com/repos/{full}");
    let owner = &repo["owner"];
    let links = json!({
        "self": {"href": format!("{api}/pulls/{number}")},
        "html": {"href": format!("https://github.com/{full}/pull/{number}")},
        "issue": {"href": format!("{api}/issues/{number}")},
        "comments": {"href": format!("{api}/issues/{number}/comments")},
        "review_comments": {"href": format!("{api}/pulls/{number}/comments")},
        "review_comment": {"href": format!("{api}/pulls/comments{{/number}}")},
        "commits": {"href": format!("{api}/pulls/{number}/commits")},
        "statuses": {"href": format!("{api}/statuses/{head_sha}")},
    });
    json!({
        "url": format!("{api}/pulls/{number}"),
        "id": 1_900_000_000 + number,
        "node_id": format!("PR_kwDOLoad{number}"),
        "html_url": format!("https://github.com/{full}/pull/{number}"),
        "diff_url": format!("https://github.com/{full}/pull/{number}.diff"),
        "patch_url": format!("https://github.com/{full}/pull/{number}.patch"),
        "issue_url": format!("{api}/issues/{number}"),
        "number": number,
        "state": "open",
        "locked": false,
        "title": format!("Grow the GPU pool in eu-north1 ({number})"),
        "user": author,
        "body": "",
        "created_at": time(number),
        "updated_at": time(number + 600),
        "closed_at": null,
        "merged_at": null,
        "merge_commit_sha": null,
        "assignee": null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "labels": [],
        "milestone": null,
        "draft": false,
        "commits_url": format!("{api}/pulls/{number}/commits"),
        "review_comments_url": format!("{api}/pulls/{number}/comments"),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{api}/issues/{number}/comments"),
        "statuses_url": format!("{api}/statuses/{head_sha}"),
        "head": git_ref(&format!("grow-gpu-{number}"), head_sha, owner, repo),
        "base": git_ref("main", &sha(0), owner, repo),
        "_links": links,
        "author_association": "MEMBER",
        "auto_merge": null,
        "active_lock_reason": null,
        "merged": false,
        "mergeable": null,
        "rebaseable": null,
        "mergeable_state": "unknown",
        "merged_by": null,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": false,
        "commits": 1,
        "additions": 4,
        "deletions": 1,
        "changed_files": 1,
    })
}

fn installation() -> Value {
    json!({"id": INSTALLATION, "node_id": format!("MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{INSTALLATION}")})
}

/// Fills `text` (a string field somewhere in `p`, reached by `at`) until the payload is
/// about `size` bytes: GitHub's payloads are mostly such text (descriptions, summaries).
fn pad(mut p: Value, size: usize, at: &[&str]) -> Vec<u8> {
    let current = serde_json::to_vec(&p).expect("JSON").len();
    let missing = size.saturating_sub(current);
    if missing > 0 {
        let line = "Adds two H100 node groups to the training clusters and moves the \
                    inference pool to the new region; the quota request is in the linked issue.\n";
        let text: String = line.chars().cycle().take(missing).collect();
        let mut field = &mut p;
        for key in at {
            field = &mut field[*key];
        }
        let old = field.as_str().unwrap_or_default().to_string();
        *field = json!(old + &text);
    }
    serde_json::to_vec(&p).expect("JSON")
}

/// A `pull_request` delivery: `action` on pull request `number` whose head is commit `head`.
pub fn pull_request_event(action: &str, number: u64, head: u64, size: usize) -> Vec<u8> {
    let repo = repository();
    let author = user("octocat", 583_231, "User");
    let head_sha = sha(head);
    let mut p = json!({
        "action": action,
        "number": number,
        "pull_request": pull_request(number, &head_sha, &author, &repo),
        "repository": repo,
        "organization": {"login": OWNER, "id": OWNER_ID},
        "installation": installation(),
        "sender": author,
    });
    if action == "synchronize" {
        // GitHub names the push: the head before it and after it.
        p["before"] = json!(sha(head.wrapping_sub(1)));
        p["after"] = json!(head_sha);
    }
    pad(p, size, &["pull_request", "body"])
}

/// An `issue_comment` `created` delivery: comment `comment_id` saying `body` on pull request
/// `number`. The padding goes into the pull request's description (GitHub sends the issue
/// with it), never into the comment, so a command stays a command.
pub fn issue_comment_event(number: u64, comment_id: u64, body: &str, size: usize) -> Vec<u8> {
    let repo = repository();
    let full = format!("{OWNER}/{NAME}");
    let api = format!("https://api.github.com/repos/{full}");
    let author = user("octocat", 583_231, "User");
    let reviewer = user("hubot-reviewer", 583_232, "User");
    let p = json!({
        "action": "created",
        "issue": {
            "url": format!("{api}/issues/{number}"),
            "repository_url": api,
            "labels_url": format!("{api}/issues/{number}/labels{{/name}}"),
            "comments_url": format!("{api}/issues/{number}/comments"),
            "events_url": format!("{api}/issues/{number}/events"),
            "html_url": format!("https://github.com/{full}/pull/{number}"),
            "id": 2_300_000_000u64 + number,
            "node_id": format!("PR_kwDOLoad{number}"),
            "number": number,
            "title": format!("Grow the GPU pool in eu-north1 ({number})"),
            "user": author,
            "labels": [],
            "state": "open",
            "locked": false,
            "assignee": null,
            "assignees": [],
            "milestone": null,
            "comments": 3,
            "created_at": time(number),
            "updated_at": time(number + 900),
            "closed_at": null,
            "author_association": "MEMBER",
            "active_lock_reason": null,
            "draft": false,
            "pull_request": {
                "url": format!("{api}/pulls/{number}"),
                "html_url": format!("https://github.com/{full}/pull/{number}"),
                "diff_url": format!("https://github.com/{full}/pull/{number}.diff"),
                "patch_url": format!("https://github.com/{full}/pull/{number}.patch"),
                "merged_at": null,
            },
            "body": "",
            "reactions": {
                "url": format!("{api}/issues/{number}/reactions"),
                "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0,
                "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
            },
            "timeline_url": format!("{api}/issues/{number}/timeline"),
            "performed_via_github_app": null,
            "state_reason": null,
        },
        "comment": {
            "url": format!("{api}/issues/comments/{comment_id}"),
            "html_url": format!("https://github.com/{full}/pull/{number}#issuecomment-{comment_id}"),
            "issue_url": format!("{api}/issues/{number}"),
            "id": comment_id,
            "node_id": format!("IC_kwDOLoad{comment_id}"),
            "user": reviewer,
            "created_at": time(comment_id),
            "updated_at": time(comment_id),
            "author_association": "MEMBER",
            "body": body,
            "reactions": {
                "url": format!("{api}/issues/comments/{comment_id}/reactions"),
                "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "hooray": 0,
                "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
            },
            "performed_via_github_app": null,
        },
        "repository": repo,
        "organization": {"login": OWNER, "id": OWNER_ID},
        "installation": installation(),
        "sender": reviewer,
    });
    pad(p, size, &["issue", "body"])
}

/// A `check_run` `rerequested` delivery ("Re-run" pressed) for run `run_id`, fleetbot's
/// `fleet/apply` run on the head of pull request `number`.
pub fn check_run_event(number: u64, run_id: u64, size: usize) -> Vec<u8> {
    let repo = repository();
    let full = format!("{OWNER}/{NAME}");
    let api = format!("https://api.github.com/repos/{full}");
    let head_sha = sha(number);
    let pr_ref = |r: &str, s: &str| json!({"ref": r, "sha": s, "repo": {"id": REPO_ID, "url": api, "name": NAME}});
    let p = json!({
        "action": "rerequested",
        "check_run": {
            "id": run_id,
            "name": "fleet/apply",
            "node_id": format!("CR_kwDOLoad{run_id}"),
            "head_sha": head_sha,
            "external_id": format!("apply:{number}:merge"),
            "url": format!("{api}/check-runs/{run_id}"),
            "html_url": format!("https://github.com/{full}/runs/{run_id}"),
            "details_url": format!("https://github.com/{full}/pull/{number}"),
            "status": "completed",
            "conclusion": "failure",
            "started_at": time(run_id),
            "completed_at": time(run_id + 40),
            "output": {
                "title": "Apply failed: quota exceeded in eu-north1",
                "summary": "",
                "text": null,
                "annotations_count": 0,
                "annotations_url": format!("{api}/check-runs/{run_id}/annotations"),
            },
            "check_suite": {
                "id": 5_000_000 + run_id,
                "node_id": format!("CS_kwDOLoad{run_id}"),
                "head_branch": format!("grow-gpu-{number}"),
                "head_sha": head_sha,
                "status": "completed",
                "conclusion": "failure",
                "url": format!("{api}/check-suites/{}", 5_000_000 + run_id),
                "before": sha(number.wrapping_sub(1)),
                "after": head_sha,
                "pull_requests": [{
                    "url": format!("{api}/pulls/{number}"),
                    "id": 1_900_000_000 + number,
                    "number": number,
                    "head": pr_ref(&format!("grow-gpu-{number}"), &head_sha),
                    "base": pr_ref("main", &sha(0)),
                }],
                "app": {"id": 1, "slug": "fleetbot", "name": "fleetbot"},
                "created_at": time(run_id),
                "updated_at": time(run_id + 40),
            },
            "app": {
                "id": 1,
                "slug": "fleetbot",
                "node_id": "A_kwDOLoadApp",
                "owner": user(OWNER, OWNER_ID, "Organization"),
                "name": "fleetbot",
                "description": "Plans and applies fleet specs",
                "external_url": "https://github.com/octo-org/fleetbot",
                "html_url": "https://github.com/apps/fleetbot",
                "created_at": time(0),
                "updated_at": time(0),
                "permissions": {"checks": "write", "contents": "read", "issues": "write", "metadata": "read", "pull_requests": "write"},
                "events": ["check_run", "issue_comment", "pull_request", "push"],
            },
            "pull_requests": [{
                "url": format!("{api}/pulls/{number}"),
                "id": 1_900_000_000 + number,
                "number": number,
                "head": pr_ref(&format!("grow-gpu-{number}"), &head_sha),
                "base": pr_ref("main", &sha(0)),
            }],
        },
        "repository": repo,
        "organization": {"login": OWNER, "id": OWNER_ID},
        "installation": installation(),
        "sender": user("octocat", 583_231, "User"),
    });
    pad(p, size, &["check_run", "output", "summary"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_reach_their_size_and_keep_their_fields() {
        let pr: Value =
            serde_json::from_slice(&pull_request_event("synchronize", 7, 3, 24_000)).unwrap();
        assert_eq!(pr["number"], 7);
        assert_eq!(pr["pull_request"]["head"]["sha"], sha(3));
        assert_eq!(pr["repository"]["default_branch"], "main");
        let c = issue_comment_event(7, 9, "/plan", 14_000);
        assert!(c.len() >= 14_000);
        let c: Value = serde_json::from_slice(&c).unwrap();
        assert_eq!(c["comment"]["body"], "/plan");
        let r: Value = serde_json::from_slice(&check_run_event(7, 11, 10_000)).unwrap();
        assert_eq!(r["check_run"]["pull_requests"][0]["number"], 7);
    }
}
