//! What GitHub asks of an installation token per REST operation: the fake's permission table.
//!
//! One row per operation the client can call, with the permission sets that GitHub accepts
//! (any one of them) and where that comes from. GitHub publishes this table only in its docs
//! repository (`src/github-apps/data/fpt-2022-11-28/server-to-server-permissions.json`, "S2S"
//! below, and each operation's `progAccess`), which the tests cannot fetch, and the pinned
//! `@octokit/openapi` carries no permission data; so the rows are written by hand, each with
//! its citation (research: notes/github-permissions.md §1). `tests/github_manifest.rs` holds the
//! table to the client's operations and to the App's manifest.
//!
//! Two rows depart from the docs on purpose, as GitHub itself does:
//! * issue-comment endpoints (`issues/*-comment*`, `issues/update`, the comment reaction) are
//!   listed under `issues` and `pull_requests`, but GitHub enforces the permission of what the
//!   URL points at: a pull request's comment needs `pull_requests`, an issue's needs `issues`
//!   (github/rest-api-description#6994: a PR comment with issues=write and pull_requests=read
//!   is refused);
//! * the reaction on an issue comment is documented as `issues: write` only, but on a pull
//!   request's comment GitHub takes `pull_requests: write` and refuses `issues: write` alone
//!   (github/docs#43843, and the workflows that fixed their 👀 reaction by adding
//!   `pull-requests: write`).

use std::collections::BTreeMap;

/// Read, or write (which includes read).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Read,
    Write,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Read => "read",
            Level::Write => "write",
        }
    }

    /// The level a manifest or token grant names (`read`, `write`); anything else grants nothing.
    pub fn parse(text: &str) -> Option<Level> {
        match text {
            "read" => Some(Level::Read),
            "write" | "admin" => Some(Level::Write),
            _ => None,
        }
    }
}

/// What a call must be made with.
#[derive(Debug, Clone, Copy)]
pub enum Needs {
    /// The App's JWT; no installation permission.
    Jwt,
    /// No credentials: a one-time code in the URL is the credential.
    Code,
    /// No credentials: public data (a token sent along would be spent for nothing).
    Public,
    /// Any installation token of the installation; no permission.
    AnyToken,
    /// An installation token granting every permission of at least one of these sets.
    AnyOf(&'static [&'static [(&'static str, Level)]]),
    /// By target: `pull_requests` at this level when the issue (or the comment's issue) is a
    /// pull request, `issues` at this level when it is an issue.
    ByTarget(Level),
}

/// One operation's row.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub operation: &'static str,
    pub needs: Needs,
    /// Where the row comes from.
    pub source: &'static str,
}

use Level::{Read, Write};

/// Every operation the client calls. A new call without a row is refused by the fake.
pub const RULES: &[Rule] = &[
    Rule {
        operation: "apps/create-installation-access-token",
        needs: Needs::Jwt,
        source: "OA description: \"You must use a JWT to access this endpoint\"",
    },
    Rule {
        operation: "apps/get-authenticated",
        needs: Needs::Jwt,
        source: "OA description: \"You must use a JWT to access this endpoint\"",
    },
    Rule {
        operation: "apps/list-installations",
        needs: Needs::Jwt,
        source: "OA description: \"You must use a JWT to access this endpoint\"",
    },
    Rule {
        operation: "apps/list-repos-accessible-to-installation",
        needs: Needs::AnyToken,
        source: "REST docs (apps/installations): the token \"does not require any permissions\"; under no S2S permission",
    },
    Rule {
        operation: "apps/create-from-manifest",
        needs: Needs::Code,
        source: "OA: enabledForGitHubApps false; the one-time code is the credential",
    },
    Rule {
        operation: "meta/get",
        needs: Needs::Public,
        source: "REST docs (meta): GET /meta works unauthenticated; @octokit/app-permissions lists it under metadata: read",
    },
    Rule {
        operation: "repos/get",
        needs: Needs::AnyOf(&[&[("metadata", Read)]]),
        source: "S2S metadata: get-a-repository",
    },
    Rule {
        operation: "repos/get-branch",
        needs: Needs::AnyOf(&[&[("contents", Read)]]),
        source: "S2S contents: get-a-branch",
    },
    Rule {
        operation: "git/get-tree",
        needs: Needs::AnyOf(&[&[("contents", Read)]]),
        source: "S2S contents: get-a-tree",
    },
    Rule {
        operation: "repos/get-content",
        needs: Needs::AnyOf(&[&[("contents", Read)]]),
        source: "S2S contents: get-repository-content",
    },
    Rule {
        operation: "pulls/list",
        needs: Needs::AnyOf(&[&[("pull_requests", Read)]]),
        source: "S2S pull_requests: list-pull-requests",
    },
    Rule {
        operation: "pulls/get",
        needs: Needs::AnyOf(&[&[("pull_requests", Read)], &[("contents", Read)]]),
        source: "S2S pull_requests and contents: get-a-pull-request (additional-permissions)",
    },
    Rule {
        operation: "pulls/list-files",
        needs: Needs::AnyOf(&[&[("pull_requests", Read)]]),
        source: "S2S pull_requests: list-pull-requests-files",
    },
    Rule {
        operation: "repos/list-pull-requests-associated-with-commit",
        needs: Needs::AnyOf(&[&[("pull_requests", Read)]]),
        source: "S2S pull_requests: list-pull-requests-associated-with-a-commit",
    },
    Rule {
        operation: "issues/list-comments",
        needs: Needs::ByTarget(Read),
        source: "S2S issues and pull_requests: list-issue-comments; enforced by target",
    },
    Rule {
        operation: "issues/get-comment",
        needs: Needs::ByTarget(Read),
        source: "S2S issues and pull_requests: get-an-issue-comment; enforced by target",
    },
    Rule {
        operation: "issues/create-comment",
        needs: Needs::ByTarget(Write),
        source: "S2S issues and pull_requests: create-an-issue-comment; by target (rest-api-description#6994)",
    },
    Rule {
        operation: "issues/update-comment",
        needs: Needs::ByTarget(Write),
        source: "S2S issues and pull_requests: update-an-issue-comment; enforced by target",
    },
    Rule {
        operation: "reactions/create-for-issue-comment",
        needs: Needs::ByTarget(Write),
        source: "docs: issues write only (reactions.json progAccess); GitHub takes pull_requests write on a PR comment (github/docs#43843)",
    },
    Rule {
        operation: "repos/get-collaborator-permission-level",
        needs: Needs::AnyOf(&[&[("metadata", Read)]]),
        source: "S2S metadata: get-repository-permissions-for-a-user",
    },
    Rule {
        operation: "issues/list-for-repo",
        needs: Needs::AnyOf(&[&[("issues", Read)]]),
        source: "S2S issues: list-repository-issues (issues only)",
    },
    Rule {
        operation: "issues/create",
        needs: Needs::AnyOf(&[&[("issues", Write)]]),
        source: "S2S issues: create-an-issue (issues only)",
    },
    Rule {
        operation: "issues/update",
        needs: Needs::ByTarget(Write),
        source: "S2S issues and pull_requests: update-an-issue; an issue needs issues",
    },
    Rule {
        operation: "checks/create",
        needs: Needs::AnyOf(&[&[("checks", Write)]]),
        source: "S2S checks: create-a-check-run; OA: \"must have the checks:write permission\"",
    },
    Rule {
        operation: "checks/update",
        needs: Needs::AnyOf(&[&[("checks", Write)]]),
        source: "S2S checks: update-a-check-run",
    },
    Rule {
        operation: "checks/list-for-ref",
        needs: Needs::AnyOf(&[&[("checks", Read)]]),
        source: "S2S checks: list-check-runs-for-a-git-reference",
    },
];

/// The row of `operation`.
pub fn rule(operation: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.operation == operation)
}

/// Permission name → level, as a manifest's `default_permissions` or a token's `permissions`.
pub type Grants = BTreeMap<String, Level>;

/// Reads `{"checks": "write", …}`.
pub fn grants_from_json(value: &serde_json::Value) -> Grants {
    value
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), Level::parse(v.as_str()?)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `grants` gives `name` at `level` (write includes read; every App reads metadata).
pub fn grants(grants: &Grants, name: &str, level: Level) -> bool {
    (name == "metadata" && level == Read) || grants.get(name).is_some_and(|g| *g >= level)
}

/// The permission sets that satisfy `needs` for a target that is a pull request (`Some(true)`),
/// an issue (`Some(false)`) or unknown (`None`: either will do, and the handler answers 404).
pub fn sets(needs: Needs, target_is_pr: Option<bool>) -> Vec<Vec<(&'static str, Level)>> {
    match needs {
        Needs::Jwt | Needs::Code | Needs::Public | Needs::AnyToken => vec![vec![]],
        Needs::AnyOf(sets) => sets.iter().map(|s| s.to_vec()).collect(),
        Needs::ByTarget(level) => match target_is_pr {
            Some(true) => vec![vec![("pull_requests", level)]],
            Some(false) => vec![vec![("issues", level)]],
            None => vec![vec![("issues", level)], vec![("pull_requests", level)]],
        },
    }
}

/// Whether `grants` satisfies one of `sets`.
pub fn allowed(g: &Grants, sets: &[Vec<(&'static str, Level)>]) -> bool {
    sets.iter()
        .any(|set| set.iter().all(|(name, level)| grants(g, name, *level)))
}

/// GitHub's `X-Accepted-GitHub-Permissions` for an operation: each set's `name=level` joined
/// by commas, the alternatives by `; ` (as documented on "Troubleshooting the REST API").
pub fn accepted_header(needs: Needs) -> String {
    sets(needs, None)
        .iter()
        .map(|set| {
            set.iter()
                .map(|(n, l)| format!("{n}={}", l.as_str()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join("; ")
}
