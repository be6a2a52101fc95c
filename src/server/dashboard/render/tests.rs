use super::super::quota::bar;
use super::super::view::*;
use super::*;
use crate::privacy::testdata;

fn view() -> DashboardView {
    DashboardView {
        generated_at: 1_700_000_000_000,
        store: "SQLite".into(),
        repositories: vec![RepositoryView {
            name: "octo/fleets".into(),
            specs: vec![SpecView {
                path: "fleets/train.yaml".into(),
                review_state: ReviewState::Pending,
                review_label: ReviewState::Pending.label().into(),
                ..Default::default()
            }],
        }],
        fleets: vec![FleetView {
            name: "train".into(),
            locked_by: None,
            clusters: vec![ClusterView {
                project: "research".into(),
                cluster: "h100-a".into(),
                state: "deployed".into(),
                region: "eu-north1".into(),
                updated_at: 1_699_999_940_000,
                ..Default::default()
            }],
        }],
        quota: Some(QuotaView {
            source: "the fleetbot simulator".into(),
            tenants: vec![TenantQuota {
                tenant: "t0123456789ab".into(),
                regions: vec![RegionQuota {
                    region: "eu-north1".into(),
                    in_use: true,
                    bars: vec![bar("compute.instance.gpu.h100", 6, 8)],
                    unlimited: 2,
                    unreadable: 0,
                }],
                error: String::new(),
            }],
            read_at: 1_699_999_990_000,
            stale: false,
        }),
        ..Default::default()
    }
}

#[test]
fn a_stale_quota_says_so_and_when_it_was_read() {
    let mut v = view();
    v.generated_at = 1_700_000_000_000;
    let fresh = render_dashboard(&v);
    assert!(!fresh.contains("id=\"quota-stale\""), "{fresh}");
    v.quota.as_mut().unwrap().stale = true;
    v.quota.as_mut().unwrap().read_at = 1_700_000_000_000 - 5 * 60_000;
    let stale = render_dashboard(&v);
    assert!(
        stale.contains("Stale: the fleetbot simulator did not answer just now; these figures are its last answer, read 5 min ago"),
        "{stale}"
    );
}

#[test]
fn text_from_specs_is_escaped_not_rendered() {
    let mut v = view();
    v.fleets[0].name = "<script>alert(1)</script>".into();
    v.fleets[0].clusters[0].error = "\"><img src=x onerror=alert(2)> & more".into();
    v.repositories[0].specs[0].path = "fleets/<b>x</b>.yaml".into();
    let html = render_dashboard(&v);
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(!html.contains("<b>x</b>"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
        "{html}"
    );
    assert!(html.contains("&amp; more"), "{html}");
}

#[test]
fn a_private_value_in_any_field_is_redacted() {
    let id = testdata::nid("mk8scluster", "e00", 16);
    let token = testdata::github("ghp_", 36);
    let mut v = view();
    // Straight into the view, past `clean`: the page's own pass must still catch them.
    v.fleets[0].clusters[0].error = format!("cluster {id} failed; token {token}");
    v.jobs.push(JobView {
        id: "d1".into(),
        error: format!("GET failed for {id}"),
        ..Default::default()
    });
    let html = render_dashboard(&v);
    assert!(!html.contains(&id), "{html}");
    assert!(!html.contains(&token), "{html}");
    assert!(html.contains("[redacted]"), "{html}");
    // `clean`, which the gatherer applies to every field, redacts as well.
    let cleaned = super::super::gather::clean(&format!("bad {id}\nnext"));
    assert!(
        !cleaned.contains(&id) && cleaned.contains("[redacted]"),
        "{cleaned}"
    );
    assert!(!cleaned.contains('\n'));
}

#[test]
fn bars_are_drawn_with_their_width_and_values() {
    let html = render_dashboard(&view());
    assert!(
        html.contains(r#"data-quota="compute.instance.gpu.h100""#),
        "{html}"
    );
    assert!(
        html.contains(r#"data-used="6" data-limit="8" data-percent="75.0""#),
        "{html}"
    );
    assert!(html.contains(r#"style="width: 75.0%""#), "{html}");
    assert!(html.contains(r#"class="bar high""#), "{html}");
    assert!(html.contains("6 GPUs of 8 GPUs"), "{html}");
    assert!(html.contains("2 more without a limit"), "{html}");
}

/// Jobs come first; the regions a fleet uses are open and the rest are folded into one
/// `<details>` that names them, so the quota section does not push the page down.
#[test]
fn jobs_lead_and_idle_regions_are_folded() {
    let mut v = view();
    v.jobs.push(JobView {
        id: "d1".into(),
        ..Default::default()
    });
    let quota = v.quota.as_mut().unwrap();
    let idle = |region: &str| RegionQuota {
        region: region.into(),
        bars: vec![bar("compute.instance.gpu.h100", 0, 8)],
        ..Default::default()
    };
    let tenant = &mut quota.tenants[0];
    tenant.regions = vec![
        idle("us-central1"),
        tenant.regions.remove(0),
        idle("eu-west1"),
    ];
    tenant.regions[1].in_use = false;
    super::super::quota::fold(quota);
    let order: Vec<(&str, bool)> = quota.tenants[0]
        .regions
        .iter()
        .map(|r| (r.region.as_str(), r.in_use))
        .collect();
    assert_eq!(
        order,
        [
            ("eu-north1", true),
            ("eu-west1", false),
            ("us-central1", false)
        ]
    );
    let html = render_dashboard(&v);
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {html}"))
    };
    assert!(at(r#"<section id="jobs">"#) < at(r#"<section id="fleets">"#));
    assert!(at(r#"<section id="jobs">"#) < at(r#"<section id="repositories">"#));
    let folded = at(r#"<details class="idle-regions""#);
    assert!(at(r#"data-region="eu-north1""#) < folded, "{html}");
    assert!(folded < at(r#"data-region="eu-west1""#), "{html}");
    assert!(
        html.contains("<summary>2 regions with nothing in use: eu-west1, us-central1</summary>"),
        "{html}"
    );
    assert_eq!(html.matches("</details>").count(), 1, "{html}");
}

#[test]
fn bar_widths_stay_within_the_track() {
    assert_eq!(bar("q", 0, 10).percent, 0.0);
    assert_eq!(bar("q", 1, 3).percent, 33.3);
    assert_eq!(bar("q", 12, 10).percent, 100.0);
    assert_eq!(bar("q", 1, 0).percent, 100.0);
    assert_eq!(bar("q", 0, 0).percent, 0.0);
    assert_eq!(bar("q", 10, 10).level, "full");
    assert_eq!(bar("q", 1, 10).level, "ok");
    let bytes = bar("compute.filesystem.size.network-ssd", 3 << 40, 4 << 40);
    assert_eq!(bytes.used_text, "3.00 TiB");
    assert_eq!(bytes.limit_text, "4.00 TiB");
}

#[test]
fn empty_sections_say_so_and_no_script_is_served() {
    let html = render_dashboard(&DashboardView {
        generated_at: 1,
        store: "SQLite".into(),
        ..Default::default()
    });
    assert!(html.contains("No review or apply is on record yet."));
    assert!(html.contains("The inventory holds no cluster."));
    assert!(html.contains("No fleet is locked."));
    assert!(html.contains("No quota source is configured"));
    assert!(html.contains("No job is on record."));
    assert!(!html.contains("<script"));
}

#[test]
fn times_are_utc_and_relative() {
    assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
    assert_eq!(utc(1_700_000_000_000), "2023-11-14 22:13:20 UTC");
    assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
    assert_eq!(ago(1_000, 61_000), "1 min ago");
    assert_eq!(ago(100_000, 10_000), "in 1 min");
    assert_eq!(ago(0, 10), "never");
    assert_eq!(ago(1, 2 * 86_400_000), "1 d ago");
}
