//! The privacy rules: stable identifiers, one-line explanations and SARIF metadata.
//!
//! Rule ids are part of the public contract (text, JSON and SARIF output, allowlists in
//! other tools, GitHub code-scanning history), so a variant's id never changes once shipped.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One privacy rule. The serde form is the stable kebab-case id (`nebius-id`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum RuleId {
    /// A Nebius ID (NID grammar) whose type prefix is a known Nebius resource type.
    #[serde(rename = "nebius-id")]
    NebiusId,
    /// An NID of any type whose routing code is a real region (`e00`, `u00`, `i00`, …).
    #[serde(rename = "nebius-generic-id")]
    NebiusGenericId,
    /// A Nebius IAM access token (`ne1…`, `nd1…`, `v1.…`).
    #[serde(rename = "nebius-iam-token")]
    NebiusIamToken,
    /// A JSON Web Token.
    #[serde(rename = "jwt")]
    Jwt,
    /// A Nebius service-account credentials document (`subject-credentials`).
    #[serde(rename = "service-account-credentials")]
    ServiceAccountCredentials,
    /// A private key block: PEM (RSA, EC, DSA, PKCS#8, encrypted), OpenSSH, PGP or PuTTY.
    #[serde(rename = "private-key")]
    PrivateKey,
    /// An SSH public key.
    #[serde(rename = "ssh-public-key")]
    SshPublicKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    #[serde(rename = "github-token")]
    GithubToken,
    /// AWS access key ID.
    #[serde(rename = "aws-access-key-id")]
    AwsAccessKeyId,
    /// AWS secret access key, recognised by the key name it is assigned to.
    #[serde(rename = "aws-secret-access-key")]
    AwsSecretAccessKey,
    /// Slack token.
    #[serde(rename = "slack-token")]
    SlackToken,
    /// Slack incoming-webhook URL (anyone holding it can post).
    #[serde(rename = "slack-webhook-url")]
    SlackWebhookUrl,
    /// Stripe live secret or restricted key.
    #[serde(rename = "stripe-secret-key")]
    StripeSecretKey,
    /// Google API key.
    #[serde(rename = "google-api-key")]
    GoogleApiKey,
    /// GitLab personal access token.
    #[serde(rename = "gitlab-token")]
    GitlabToken,
    /// npm access token.
    #[serde(rename = "npm-token")]
    NpmToken,
    /// SendGrid API key.
    #[serde(rename = "sendgrid-api-key")]
    SendgridApiKey,
    /// Anthropic API key.
    #[serde(rename = "anthropic-api-key")]
    AnthropicApiKey,
    /// OpenAI API key (project, service-account, admin or legacy user key).
    #[serde(rename = "openai-api-key")]
    OpenaiApiKey,
    /// Hugging Face user access token or organisation API token.
    #[serde(rename = "huggingface-token")]
    HuggingfaceToken,
    /// Twilio API key SID.
    #[serde(rename = "twilio-api-key")]
    TwilioApiKey,
    /// Shopify access token or shared secret.
    #[serde(rename = "shopify-token")]
    ShopifyToken,
    /// DigitalOcean personal access, OAuth or refresh token.
    #[serde(rename = "digitalocean-token")]
    DigitaloceanToken,
    /// HashiCorp Vault service, batch or recovery token.
    #[serde(rename = "vault-token")]
    VaultToken,
    /// Terraform Cloud or Enterprise API token.
    #[serde(rename = "terraform-cloud-token")]
    TerraformCloudToken,
    /// PyPI API token.
    #[serde(rename = "pypi-token")]
    PypiToken,
    /// Databricks personal access token.
    #[serde(rename = "databricks-token")]
    DatabricksToken,
    /// Doppler token (personal, CLI, service, service-account, SCIM or audit).
    #[serde(rename = "doppler-token")]
    DopplerToken,
    /// Linear personal API key.
    #[serde(rename = "linear-api-key")]
    LinearApiKey,
    /// Postman API key.
    #[serde(rename = "postman-api-key")]
    PostmanApiKey,
    /// Grafana Cloud access policy token or service-account token.
    #[serde(rename = "grafana-token")]
    GrafanaToken,
    /// New Relic user API key.
    #[serde(rename = "newrelic-api-key")]
    NewrelicApiKey,
    /// Sentry organisation or user auth token.
    #[serde(rename = "sentry-token")]
    SentryToken,
    /// age secret key (X25519 identity).
    #[serde(rename = "age-secret-key")]
    AgeSecretKey,
    /// Square access token or OAuth application secret.
    #[serde(rename = "square-token")]
    SquareToken,
    /// Telegram bot token.
    #[serde(rename = "telegram-bot-token")]
    TelegramBotToken,
    /// Atlassian API token.
    #[serde(rename = "atlassian-api-token")]
    AtlassianApiToken,
    /// Azure storage account key in a connection string.
    #[serde(rename = "azure-storage-account-key")]
    AzureStorageAccountKey,
    /// Alibaba Cloud AccessKey ID.
    #[serde(rename = "alibaba-access-key-id")]
    AlibabaAccessKeyId,
    /// Pulumi access token.
    #[serde(rename = "pulumi-token")]
    PulumiToken,
    /// Dynatrace API token.
    #[serde(rename = "dynatrace-token")]
    DynatraceToken,
    /// PlanetScale service token, password or OAuth token.
    #[serde(rename = "planetscale-token")]
    PlanetscaleToken,
    /// A private Nebius container registry location (`cr.<region>.nebius.cloud/<name>`).
    #[serde(rename = "private-registry-location")]
    PrivateRegistryLocation,
    /// A private `s3://` bucket location.
    #[serde(rename = "private-bucket-location")]
    PrivateBucketLocation,
    /// Fleet spec `tenant_id` that is neither empty nor a placeholder.
    #[serde(rename = "spec-tenant-id")]
    SpecTenantId,
    /// Fleet spec `project_id` that is neither empty nor a placeholder.
    #[serde(rename = "spec-project-id")]
    SpecProjectId,
    /// Fleet spec `capacity_block_group` that is neither empty nor a placeholder.
    #[serde(rename = "spec-capacity-block-group")]
    SpecCapacityBlockGroup,
    /// Fleet spec `bucket_name` that is neither empty nor a placeholder.
    #[serde(rename = "spec-bucket-name")]
    SpecBucketName,
    /// Fleet spec `filesystem_csi_chart_repository` that is neither empty nor a placeholder.
    #[serde(rename = "spec-filesystem-csi-chart-repository")]
    SpecFilesystemCsiChartRepository,
    /// Fleet spec `existing_filestore` that is neither empty nor a placeholder.
    #[serde(rename = "spec-existing-filestore")]
    SpecExistingFilestore,
    /// Fleet spec `subnet_id` that is neither empty nor a placeholder.
    #[serde(rename = "spec-subnet-id")]
    SpecSubnetId,
    /// Fleet spec `ssh_public_key` that is neither empty nor a placeholder.
    #[serde(rename = "spec-ssh-public-key")]
    SpecSshPublicKey,
}

impl RuleId {
    /// Every rule, in reporting priority order (earlier wins when two rules cover the same text).
    pub const ALL: [RuleId; 52] = [
        RuleId::PrivateKey,
        RuleId::ServiceAccountCredentials,
        RuleId::GithubToken,
        RuleId::AwsAccessKeyId,
        RuleId::AwsSecretAccessKey,
        RuleId::SlackToken,
        RuleId::SlackWebhookUrl,
        RuleId::StripeSecretKey,
        RuleId::GoogleApiKey,
        RuleId::GitlabToken,
        RuleId::NpmToken,
        RuleId::SendgridApiKey,
        RuleId::AnthropicApiKey,
        RuleId::OpenaiApiKey,
        RuleId::HuggingfaceToken,
        RuleId::TwilioApiKey,
        RuleId::ShopifyToken,
        RuleId::DigitaloceanToken,
        RuleId::VaultToken,
        RuleId::TerraformCloudToken,
        RuleId::PypiToken,
        RuleId::DatabricksToken,
        RuleId::DopplerToken,
        RuleId::LinearApiKey,
        RuleId::PostmanApiKey,
        RuleId::GrafanaToken,
        RuleId::NewrelicApiKey,
        RuleId::SentryToken,
        RuleId::AgeSecretKey,
        RuleId::SquareToken,
        RuleId::TelegramBotToken,
        RuleId::AtlassianApiToken,
        RuleId::AzureStorageAccountKey,
        RuleId::AlibabaAccessKeyId,
        RuleId::PulumiToken,
        RuleId::DynatraceToken,
        RuleId::PlanetscaleToken,
        RuleId::NebiusIamToken,
        RuleId::Jwt,
        RuleId::SshPublicKey,
        RuleId::PrivateRegistryLocation,
        RuleId::PrivateBucketLocation,
        RuleId::NebiusId,
        RuleId::NebiusGenericId,
        RuleId::SpecTenantId,
        RuleId::SpecProjectId,
        RuleId::SpecCapacityBlockGroup,
        RuleId::SpecBucketName,
        RuleId::SpecFilesystemCsiChartRepository,
        RuleId::SpecExistingFilestore,
        RuleId::SpecSubnetId,
        RuleId::SpecSshPublicKey,
    ];

    /// The stable id, identical to the serde form.
    pub fn as_str(&self) -> &'static str {
        match self {
            RuleId::NebiusId => "nebius-id",
            RuleId::NebiusGenericId => "nebius-generic-id",
            RuleId::NebiusIamToken => "nebius-iam-token",
            RuleId::Jwt => "jwt",
            RuleId::ServiceAccountCredentials => "service-account-credentials",
            RuleId::PrivateKey => "private-key",
            RuleId::SshPublicKey => "ssh-public-key",
            RuleId::GithubToken => "github-token",
            RuleId::AwsAccessKeyId => "aws-access-key-id",
            RuleId::AwsSecretAccessKey => "aws-secret-access-key",
            RuleId::SlackToken => "slack-token",
            RuleId::SlackWebhookUrl => "slack-webhook-url",
            RuleId::StripeSecretKey => "stripe-secret-key",
            RuleId::GoogleApiKey => "google-api-key",
            RuleId::GitlabToken => "gitlab-token",
            RuleId::NpmToken => "npm-token",
            RuleId::SendgridApiKey => "sendgrid-api-key",
            RuleId::AnthropicApiKey => "anthropic-api-key",
            RuleId::OpenaiApiKey => "openai-api-key",
            RuleId::HuggingfaceToken => "huggingface-token",
            RuleId::TwilioApiKey => "twilio-api-key",
            RuleId::ShopifyToken => "shopify-token",
            RuleId::DigitaloceanToken => "digitalocean-token",
            RuleId::VaultToken => "vault-token",
            RuleId::TerraformCloudToken => "terraform-cloud-token",
            RuleId::PypiToken => "pypi-token",
            RuleId::DatabricksToken => "databricks-token",
            RuleId::DopplerToken => "doppler-token",
            RuleId::LinearApiKey => "linear-api-key",
            RuleId::PostmanApiKey => "postman-api-key",
            RuleId::GrafanaToken => "grafana-token",
            RuleId::NewrelicApiKey => "newrelic-api-key",
            RuleId::SentryToken => "sentry-token",
            RuleId::AgeSecretKey => "age-secret-key",
            RuleId::SquareToken => "square-token",
            RuleId::TelegramBotToken => "telegram-bot-token",
            RuleId::AtlassianApiToken => "atlassian-api-token",
            RuleId::AzureStorageAccountKey => "azure-storage-account-key",
            RuleId::AlibabaAccessKeyId => "alibaba-access-key-id",
            RuleId::PulumiToken => "pulumi-token",
            RuleId::DynatraceToken => "dynatrace-token",
            RuleId::PlanetscaleToken => "planetscale-token",
            RuleId::PrivateRegistryLocation => "private-registry-location",
            RuleId::PrivateBucketLocation => "private-bucket-location",
            RuleId::SpecTenantId => "spec-tenant-id",
            RuleId::SpecProjectId => "spec-project-id",
            RuleId::SpecCapacityBlockGroup => "spec-capacity-block-group",
            RuleId::SpecBucketName => "spec-bucket-name",
            RuleId::SpecFilesystemCsiChartRepository => "spec-filesystem-csi-chart-repository",
            RuleId::SpecExistingFilestore => "spec-existing-filestore",
            RuleId::SpecSubnetId => "spec-subnet-id",
            RuleId::SpecSshPublicKey => "spec-ssh-public-key",
        }
    }

    /// Parses a stable id back into a rule.
    pub fn from_id(id: &str) -> Option<RuleId> {
        RuleId::ALL.into_iter().find(|r| r.as_str() == id)
    }

    /// One line that tells a reviewer what was found and what to do, without the value.
    pub fn explanation(&self) -> &'static str {
        match self {
            RuleId::NebiusId => {
                "Nebius resource ID of a known type; committed specs must use an empty value or a placeholder"
            }
            RuleId::NebiusGenericId => {
                "identifier in Nebius ID form with a real region routing code; keep real IDs out of Git"
            }
            RuleId::NebiusIamToken => {
                "Nebius IAM access token; revoke it and load tokens at runtime instead"
            }
            RuleId::Jwt => "JSON Web Token; revoke it and load tokens at runtime instead",
            RuleId::ServiceAccountCredentials => {
                "Nebius service-account credentials file; revoke the key and keep credentials outside Git"
            }
            RuleId::PrivateKey => "private key block; revoke the key and keep it outside Git",
            RuleId::SshPublicKey => {
                "SSH public key; fleet specs leave keys empty and resolve them from ~/.ssh at runtime"
            }
            RuleId::GithubToken => "GitHub token; revoke it and load tokens at runtime instead",
            RuleId::AwsAccessKeyId => {
                "AWS access key ID; deactivate it in IAM and load credentials at runtime instead"
            }
            RuleId::AwsSecretAccessKey => {
                "AWS secret access key; deactivate its access key in IAM and load credentials at runtime instead"
            }
            RuleId::SlackToken => "Slack token; revoke it and load tokens at runtime instead",
            RuleId::SlackWebhookUrl => {
                "Slack incoming-webhook URL (anyone holding it can post); rotate it and keep it outside Git"
            }
            RuleId::StripeSecretKey => {
                "Stripe live secret or restricted key; roll it in the Stripe dashboard and keep it outside Git"
            }
            RuleId::GoogleApiKey => {
                "Google API key; delete or restrict it and load keys at runtime instead"
            }
            RuleId::GitlabToken => {
                "GitLab personal access token; revoke it and load tokens at runtime instead"
            }
            RuleId::NpmToken => "npm access token; revoke it and load tokens at runtime instead",
            RuleId::SendgridApiKey => {
                "SendGrid API key; delete it and load keys at runtime instead"
            }
            RuleId::AnthropicApiKey => {
                "Anthropic API key; disable it in the Anthropic Console and load keys at runtime instead"
            }
            RuleId::OpenaiApiKey => {
                "OpenAI API key; revoke it in the OpenAI dashboard and load keys at runtime instead"
            }
            RuleId::HuggingfaceToken => {
                "Hugging Face access token; invalidate it in the settings and load tokens at runtime instead"
            }
            RuleId::TwilioApiKey => {
                "Twilio API key; delete it in the Twilio Console and load keys at runtime instead"
            }
            RuleId::ShopifyToken => {
                "Shopify access token or shared secret; rotate it and load secrets at runtime instead"
            }
            RuleId::DigitaloceanToken => {
                "DigitalOcean token; revoke it in the control panel and load tokens at runtime instead"
            }
            RuleId::VaultToken => {
                "HashiCorp Vault token; revoke it (vault token revoke) and load tokens at runtime instead"
            }
            RuleId::TerraformCloudToken => {
                "Terraform Cloud API token; delete it in the user or team settings and load tokens at runtime instead"
            }
            RuleId::PypiToken => {
                "PyPI API token; remove it in the PyPI account settings and use trusted publishing or a runtime secret"
            }
            RuleId::DatabricksToken => {
                "Databricks personal access token; revoke it in the workspace settings and load tokens at runtime instead"
            }
            RuleId::DopplerToken => {
                "Doppler token; revoke it in the Doppler dashboard and load tokens at runtime instead"
            }
            RuleId::LinearApiKey => {
                "Linear API key; revoke it in the Linear settings and load keys at runtime instead"
            }
            RuleId::PostmanApiKey => {
                "Postman API key; regenerate or delete it and load keys at runtime instead"
            }
            RuleId::GrafanaToken => {
                "Grafana token; delete it in Grafana and load tokens at runtime instead"
            }
            RuleId::NewrelicApiKey => {
                "New Relic user API key; delete it in the API keys UI and load keys at runtime instead"
            }
            RuleId::SentryToken => {
                "Sentry auth token; revoke it in the Sentry settings and load tokens at runtime instead"
            }
            RuleId::AgeSecretKey => {
                "age secret key; everything encrypted to it must be re-encrypted to a new key kept outside Git"
            }
            RuleId::SquareToken => {
                "Square access token or application secret; replace it in the Developer Dashboard and load it at runtime instead"
            }
            RuleId::TelegramBotToken => {
                "Telegram bot token; revoke it with BotFather and load it at runtime instead"
            }
            RuleId::AtlassianApiToken => {
                "Atlassian API token; revoke it in the Atlassian account settings and load it at runtime instead"
            }
            RuleId::AzureStorageAccountKey => {
                "Azure storage account key; rotate the account key and load the connection string at runtime instead"
            }
            RuleId::AlibabaAccessKeyId => {
                "Alibaba Cloud AccessKey ID; disable the AccessKey pair in RAM and load credentials at runtime instead"
            }
            RuleId::PulumiToken => {
                "Pulumi access token; delete it in the Pulumi Cloud console and load it at runtime instead"
            }
            RuleId::DynatraceToken => {
                "Dynatrace API token; revoke it in the Dynatrace access tokens page and load it at runtime instead"
            }
            RuleId::PlanetscaleToken => {
                "PlanetScale token or password; revoke it and load it at runtime instead"
            }
            RuleId::PrivateRegistryLocation => {
                "private Nebius container registry location; supply it in private runtime config"
            }
            RuleId::PrivateBucketLocation => {
                "private s3:// bucket location; supply it in private runtime config"
            }
            RuleId::SpecTenantId => {
                "fleet spec tenant_id must be empty (resolved from the Nebius profile) or a placeholder"
            }
            RuleId::SpecProjectId => {
                "fleet spec project_id must be empty or a placeholder such as <your-project-id>"
            }
            RuleId::SpecCapacityBlockGroup => {
                "fleet spec capacity_block_group must be empty or a placeholder such as capacityblockgroup-REPLACE_AT_RUNTIME"
            }
            RuleId::SpecBucketName => {
                "fleet spec bucket_name must be empty (a name is derived at runtime) or a placeholder"
            }
            RuleId::SpecFilesystemCsiChartRepository => {
                "fleet spec filesystem_csi_chart_repository must be empty; private chart endpoints belong in runtime config"
            }
            RuleId::SpecExistingFilestore => {
                "fleet spec existing_filestore must be empty or a placeholder"
            }
            RuleId::SpecSubnetId => "fleet spec subnet_id must be empty or a placeholder",
            RuleId::SpecSshPublicKey => {
                "fleet spec ssh_public_key must be empty (read from ~/.ssh at runtime) or a placeholder"
            }
        }
    }

    /// A CamelCase name for SARIF `rules[].name`.
    pub fn sarif_name(&self) -> &'static str {
        match self {
            RuleId::NebiusId => "NebiusId",
            RuleId::NebiusGenericId => "NebiusGenericId",
            RuleId::NebiusIamToken => "NebiusIamToken",
            RuleId::Jwt => "JsonWebToken",
            RuleId::ServiceAccountCredentials => "ServiceAccountCredentials",
            RuleId::PrivateKey => "PrivateKey",
            RuleId::SshPublicKey => "SshPublicKey",
            RuleId::GithubToken => "GithubToken",
            RuleId::AwsAccessKeyId => "AwsAccessKeyId",
            RuleId::AwsSecretAccessKey => "AwsSecretAccessKey",
            RuleId::SlackToken => "SlackToken",
            RuleId::SlackWebhookUrl => "SlackWebhookUrl",
            RuleId::StripeSecretKey => "StripeSecretKey",
            RuleId::GoogleApiKey => "GoogleApiKey",
            RuleId::GitlabToken => "GitlabToken",
            RuleId::NpmToken => "NpmToken",
            RuleId::SendgridApiKey => "SendgridApiKey",
            RuleId::AnthropicApiKey => "AnthropicApiKey",
            RuleId::OpenaiApiKey => "OpenaiApiKey",
            RuleId::HuggingfaceToken => "HuggingfaceToken",
            RuleId::TwilioApiKey => "TwilioApiKey",
            RuleId::ShopifyToken => "ShopifyToken",
            RuleId::DigitaloceanToken => "DigitaloceanToken",
            RuleId::VaultToken => "VaultToken",
            RuleId::TerraformCloudToken => "TerraformCloudToken",
            RuleId::PypiToken => "PypiToken",
            RuleId::DatabricksToken => "DatabricksToken",
            RuleId::DopplerToken => "DopplerToken",
            RuleId::LinearApiKey => "LinearApiKey",
            RuleId::PostmanApiKey => "PostmanApiKey",
            RuleId::GrafanaToken => "GrafanaToken",
            RuleId::NewrelicApiKey => "NewrelicApiKey",
            RuleId::SentryToken => "SentryToken",
            RuleId::AgeSecretKey => "AgeSecretKey",
            RuleId::SquareToken => "SquareToken",
            RuleId::TelegramBotToken => "TelegramBotToken",
            RuleId::AtlassianApiToken => "AtlassianApiToken",
            RuleId::AzureStorageAccountKey => "AzureStorageAccountKey",
            RuleId::AlibabaAccessKeyId => "AlibabaAccessKeyId",
            RuleId::PulumiToken => "PulumiToken",
            RuleId::DynatraceToken => "DynatraceToken",
            RuleId::PlanetscaleToken => "PlanetscaleToken",
            RuleId::PrivateRegistryLocation => "PrivateRegistryLocation",
            RuleId::PrivateBucketLocation => "PrivateBucketLocation",
            RuleId::SpecTenantId => "SpecTenantId",
            RuleId::SpecProjectId => "SpecProjectId",
            RuleId::SpecCapacityBlockGroup => "SpecCapacityBlockGroup",
            RuleId::SpecBucketName => "SpecBucketName",
            RuleId::SpecFilesystemCsiChartRepository => "SpecFilesystemCsiChartRepository",
            RuleId::SpecExistingFilestore => "SpecExistingFilestore",
            RuleId::SpecSubnetId => "SpecSubnetId",
            RuleId::SpecSshPublicKey => "SpecSshPublicKey",
        }
    }

    /// Whether the rule finds a credential (to be revoked) rather than an identifier.
    pub fn is_credential(&self) -> bool {
        matches!(
            self,
            RuleId::NebiusIamToken
                | RuleId::Jwt
                | RuleId::ServiceAccountCredentials
                | RuleId::PrivateKey
                | RuleId::GithubToken
                | RuleId::AwsAccessKeyId
                | RuleId::AwsSecretAccessKey
                | RuleId::SlackToken
                | RuleId::SlackWebhookUrl
                | RuleId::StripeSecretKey
                | RuleId::GoogleApiKey
                | RuleId::GitlabToken
                | RuleId::NpmToken
                | RuleId::SendgridApiKey
                | RuleId::AnthropicApiKey
                | RuleId::OpenaiApiKey
                | RuleId::HuggingfaceToken
                | RuleId::TwilioApiKey
                | RuleId::ShopifyToken
                | RuleId::DigitaloceanToken
                | RuleId::VaultToken
                | RuleId::TerraformCloudToken
                | RuleId::PypiToken
                | RuleId::DatabricksToken
                | RuleId::DopplerToken
                | RuleId::LinearApiKey
                | RuleId::PostmanApiKey
                | RuleId::GrafanaToken
                | RuleId::NewrelicApiKey
                | RuleId::SentryToken
                | RuleId::AgeSecretKey
                | RuleId::SquareToken
                | RuleId::TelegramBotToken
                | RuleId::AtlassianApiToken
                | RuleId::AzureStorageAccountKey
                | RuleId::AlibabaAccessKeyId
                | RuleId::PulumiToken
                | RuleId::DynatraceToken
                | RuleId::PlanetscaleToken
        )
    }

    /// Position in [`RuleId::ALL`]; used as the SARIF `ruleIndex` and as the tie-break priority.
    pub fn index(&self) -> usize {
        RuleId::ALL
            .iter()
            .position(|r| r == self)
            .expect("every rule is listed in RuleId::ALL")
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_serde_and_from_id() {
        for rule in RuleId::ALL {
            let json = serde_json::to_string(&rule).unwrap();
            assert_eq!(json, format!("\"{}\"", rule.as_str()));
            let back: RuleId = serde_json::from_str(&json).unwrap();
            assert_eq!(back, rule);
            assert_eq!(RuleId::from_id(rule.as_str()), Some(rule));
            assert_eq!(RuleId::ALL[rule.index()], rule);
        }
    }

    #[test]
    fn ids_are_unique_and_explanations_are_one_line() {
        let mut ids: Vec<_> = RuleId::ALL.iter().map(|r| r.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), RuleId::ALL.len());
        for rule in RuleId::ALL {
            assert!(!rule.explanation().contains('\n'));
            assert!(!rule.explanation().is_empty());
        }
    }
}
