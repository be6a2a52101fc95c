use fleetbot::quota::run::{PreflightCommand, run};
#[test]
fn dump() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (spec, q, c, md) in [
        (
            "fleet1-test.yaml",
            "allowances-one-gpu-short.json",
            None,
            "/tmp/qt/a.md",
        ),
        (
            "rtxpro-8gpu-five-cluster.yaml",
            "allowances-room.json",
            Some("capacity-blocks.json"),
            "/tmp/qt/b.md",
        ),
        (
            "rtxpro-8gpu-five-cluster.yaml",
            "allowances-room.json",
            Some("capacity-blocks-too-small.json"),
            "/tmp/qt/c.md",
        ),
    ] {
        let cmd = PreflightCommand {
            spec: root.join("fixtures/specs").join(spec),
            quotas: Some(root.join("fixtures/quotas").join(q)),
            capacity: c.map(|c| root.join("fixtures/quotas").join(c)),
            tenant_id: "tenant-example".into(),
            markdown: Some(md.into()),
            ..Default::default()
        };
        let (mut o, mut e) = (Vec::new(), Vec::new());
        let code = run(&cmd, &mut o, &mut e);
        println!(
            "=== {spec} {q} exit {code}\n--- stdout\n{}--- stderr\n{}",
            String::from_utf8_lossy(&o),
            String::from_utf8_lossy(&e)
        );
    }
}
