//! `/verify-storage`, `/verify-graphics` and `/verify-mig` on a pull request: the fleets it
//! changed (or `fleet=`), their clusters (or those `clusters=` names, `*` and `?` allowed),
//! verified on every worker through the engine and published by
//! [`crate::bot::verification::verify_and_publish`]. The reply points at the check run.

use super::deploy_commands::{Said, changed_fleets, commit_of};
use super::{Bot, BotError};
use crate::bot::commands::{Command, CommandKind};
use crate::bot::deploy::job::short;
use crate::bot::report::ReplyNote;
use crate::bot::report::verify::check_name;
use crate::bot::verification::verify_and_publish;
use crate::github::RepoClient;
use crate::github::events::IssueCommentEvent;
use crate::verify::Kind as VerifyKind;

impl Bot {
    pub(super) async fn verify_command(
        &self,
        repo: &RepoClient,
        e: &IssueCommentEvent,
        command: &Command,
        said: &mut Said,
    ) -> Result<String, BotError> {
        let kind = match command.kind {
            CommandKind::VerifyGraphics => VerifyKind::Graphics,
            CommandKind::VerifyMig => VerifyKind::Mig,
            _ => VerifyKind::Storage,
        };
        let slash = format!("/{}", kind.command());
        let Some(deployer) = &self.settings.deploy() else {
            said.errors.push(format!(
                "{slash} is not available: fleetbot has no cloud configured to verify"
            ));
            return Ok("refused: no cloud".into());
        };
        let only = command.args.get("fleet").map(String::as_str);
        let pattern = command
            .args
            .get("clusters")
            .or_else(|| command.args.get("cluster"))
            .map(String::as_str);
        let Some((pr, targets)) = changed_fleets(repo, e.issue_number, only, &slash, said).await?
        else {
            return Ok("refused: no fleet".into());
        };
        let sha = commit_of(&pr);
        let mut specs = Vec::new();
        for target in targets.iter().filter(|t| !t.removed) {
            let spec = match repo.file_content(&target.path, &sha).await? {
                Some(bytes) => std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(|t| self.settings.load_spec(t, &target.path).ok()),
                None => None,
            };
            specs.push((target.path.clone(), spec));
        }
        let check = verify_and_publish(
            repo,
            deployer,
            kind,
            &sha,
            format!("{}:c{}", kind.command(), e.comment_id),
            specs,
            pattern,
            &self.alias_key(repo.installation_id()),
        )
        .await?;
        said.notes.push(ReplyNote {
            line: format!(
                "{slash} at {}: {}; the {} check run has the details",
                short(&sha),
                check.title,
                check_name(kind)
            ),
            items: Vec::new(),
        });
        Ok(format!("{:?}", check.conclusion).to_lowercase())
    }
}
