//! `issue_comment`: the commands of a new comment on a pull request, each run only with the
//! permission the repository config asks for, answered in one short reply. The commands that
//! act on fleets are in [`super::deploy_commands`].

use super::deploy_commands::Said;
use super::{Bot, BotError, Handled};
use crate::bot::commands::{Command, CommandKind, ParsedComment, parse_comment};
use crate::bot::config::LoadedConfig;
use crate::bot::jobs::load_config;
use crate::bot::render::{render_command_reply, reply_marker};
use crate::bot::report::{CommandHelp, ReplyNote};
use crate::bot::triage::not_for_commands;
use crate::github::events::IssueCommentEvent;
use crate::github::{ClientError, Permission, PullState, RepoClient};

/// Why a comment runs no command, before its body is even read.
/// What running a comment's commands produced, for the reply.
struct Answers {
    errors: Vec<String>,
    notes: Vec<ReplyNote>,
    help: bool,
    plan: bool,
    /// Commands that act on fleets, run after the permission checks, in comment order.
    fleet_commands: Vec<Command>,
    /// Every other command with what became of it, for the audit log.
    audited: Vec<(CommandKind, String)>,
    ran: usize,
}

impl Answers {
    fn needs_reply(&self) -> bool {
        !self.errors.is_empty() || !self.notes.is_empty() || self.help
    }
}

/// The commenter's permission, asked of GitHub once and only when a command needs it.
struct Commenter<'a> {
    repo: &'a RepoClient,
    login: &'a str,
    permission: Option<Permission>,
}

impl Commenter<'_> {
    async fn permission(&mut self) -> Result<Permission, ClientError> {
        if let Some(p) = self.permission {
            return Ok(p);
        }
        let p = self.repo.collaborator_permission(self.login).await?;
        self.permission = Some(p);
        Ok(p)
    }

    /// Why the commenter may not run `command`, if they may not.
    async fn refusal(
        &mut self,
        config: &LoadedConfig,
        command: &Command,
    ) -> Result<Option<String>, ClientError> {
        let needed = config.config.required_permission(command.kind.name());
        if needed == Permission::None {
            return Ok(None);
        }
        let have = self.permission().await?;
        Ok((have < needed).then(|| {
            format!(
                "{} needs {} permission on this repository; you have {}",
                command.kind,
                needed.as_str(),
                have.as_str()
            )
        }))
    }
}

impl Bot {
    pub(super) async fn on_comment(&self, e: IssueCommentEvent) -> Result<Handled, BotError> {
        if let Some(reason) = not_for_commands(&e) {
            return Ok(Handled::Ignored(reason.into()));
        }
        let parsed = parse_comment(&e.body);
        if parsed.is_empty() {
            return Ok(Handled::Ignored("no command in the comment".into()));
        }
        let Some(installation) = e.installation_id else {
            return Ok(Handled::Ignored(
                "the delivery names no installation".into(),
            ));
        };
        let repo = self.github.repo(installation, e.repo.clone());
        if let Err(err) = repo.add_reaction(e.comment_id, "eyes").await {
            // The acknowledgement is a courtesy; the commands still run.
            tracing::warn!("could not react to the comment: {err}");
        }
        let config = load_config(&repo).await?;
        let mut answers = run_commands(&repo, &config, &e, &parsed).await?;
        if answers.plan {
            self.plan(&repo, e.issue_number, &mut answers.notes).await?;
        }
        let mut said = Said::default();
        for command in std::mem::take(&mut answers.fleet_commands) {
            self.fleet_command(&repo, &e, &command, &mut said).await?;
        }
        self.audit_commands(&repo, &e, &answers.audited).await;
        answers.notes.append(&mut said.notes);
        answers.errors.append(&mut said.errors);
        if answers.needs_reply() {
            reply(&repo, &config, &e, &answers).await?;
        }
        Ok(Handled::Commands {
            ran: answers.ran,
            refused: answers.errors.len(),
            jobs: said.jobs,
        })
    }

    /// Leaves an audit record of each command that is not a fleet command (those record
    /// their own, with what they did).
    async fn audit_commands(
        &self,
        repo: &RepoClient,
        e: &IssueCommentEvent,
        commands: &[(CommandKind, String)],
    ) {
        let Some(deployer) = &self.settings.deploy() else {
            return;
        };
        for (kind, outcome) in commands {
            let entry = crate::store::AuditEntry {
                at: crate::store::queue::now_ms(),
                actor: e.author.clone(),
                action: kind.to_string(),
                repo: repo.repo().to_string(),
                pr: e.issue_number,
                sha: String::new(),
                fleet: String::new(),
                outcome: outcome.clone(),
                digest: String::new(),
                detail: String::new(),
            };
            crate::fleet::apply::audit::record(deployer.store.as_ref(), &entry).await;
        }
    }

    /// `/plan`: the preflight of the head at the moment the command is handled.
    async fn plan(
        &self,
        repo: &RepoClient,
        number: u64,
        notes: &mut Vec<ReplyNote>,
    ) -> Result<(), BotError> {
        let pr = repo.pull_request(number).await?;
        if pr.state == PullState::Open {
            self.preflight(repo, number, &pr.head_sha, &pr.base_sha)
                .await?;
        } else {
            notes.push("/plan: the pull request is not open".into());
        }
        Ok(())
    }
}

/// Checks each command's permission and runs what needs no more than the comment: `/plan` is
/// only marked, to run once however often it was asked for.
async fn run_commands(
    repo: &RepoClient,
    config: &LoadedConfig,
    e: &IssueCommentEvent,
    parsed: &ParsedComment,
) -> Result<Answers, ClientError> {
    let mut answers = Answers {
        errors: parsed.errors.iter().map(|e| e.to_string()).collect(),
        notes: Vec::new(),
        help: false,
        plan: false,
        fleet_commands: Vec::new(),
        audited: Vec::new(),
        ran: 0,
    };
    let mut commenter = Commenter {
        repo,
        login: &e.author,
        permission: None,
    };
    for command in &parsed.commands {
        if let Some(refusal) = commenter.refusal(config, command).await? {
            answers
                .audited
                .push((command.kind, format!("refused: {refusal}")));
            answers.errors.push(refusal);
            continue;
        }
        if !matches!(
            command.kind,
            CommandKind::Apply
                | CommandKind::ApproveDestroy
                | CommandKind::Unlock
                | CommandKind::Status
                | CommandKind::Reconcile
                | CommandKind::VerifyStorage
                | CommandKind::VerifyGraphics
                | CommandKind::VerifyMig
        ) {
            answers.audited.push((command.kind, "ran".into()));
        }
        answers.ran += 1;
        match command.kind {
            CommandKind::Plan => answers.plan = true,
            CommandKind::Help => answers.help = true,
            CommandKind::Apply
            | CommandKind::ApproveDestroy
            | CommandKind::Unlock
            | CommandKind::Status
            | CommandKind::Reconcile
            | CommandKind::VerifyStorage
            | CommandKind::VerifyGraphics
            | CommandKind::VerifyMig => answers.fleet_commands.push(command.clone()),
        }
    }
    Ok(answers)
}

/// One reply per comment, found again by its marker, so a retried job edits instead of posting.
async fn reply(
    repo: &RepoClient,
    config: &LoadedConfig,
    e: &IssueCommentEvent,
    answers: &Answers,
) -> Result<(), ClientError> {
    let commands = CommandHelp::all(|name| config.config.required_permission(name));
    let reply = render_command_reply(
        e.comment_id,
        Some(&e.author),
        &answers.errors,
        &answers.notes,
        answers.help,
        &commands,
    );
    repo.upsert_marked_comment(e.issue_number, &reply_marker(e.comment_id), &reply)
        .await?;
    Ok(())
}
