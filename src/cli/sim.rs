//! `fleetbot sim`: run the Nebius simulator as a standalone server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::sim::{Simulator, World};

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to serve the Nebius gRPC API on (loopback unless you mean otherwise).
    #[arg(long, default_value = "127.0.0.1:7557", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// World file (see fixtures/sim/); the embedded default world when absent.
    #[arg(long, value_name = "FILE")]
    pub world: Option<PathBuf>,
    /// Persist the world here, and restore it from here on the next start.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// A bearer token the simulator accepts (repeatable); clients pass it as NEBIUS_IAM_TOKEN.
    #[arg(
        long = "token",
        env = "FLEETBOT_SIM_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true
    )]
    pub tokens: Vec<String>,
    /// Serve the simulator's own counters (calls per gRPC method) as Prometheus text at
    /// `http://ADDR/metrics`, for load scripts.
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<SocketAddr>,
    /// Run as the embedded default's resident simulator (what `fleetbot kubeconfig` starts):
    /// with a token of its own, written with where it listens beside the state.
    #[arg(long, hide = true, requires = "state")]
    pub resident: bool,
}

/// `GET /metrics`: `fleetbot_sim_calls_total{method="…"} N` per gRPC method, and
/// `fleetbot_sim_kube_requests_total{method="…"} N` per HTTP method of the clusters'
/// Kubernetes API, and `fleetbot_sim_kube_cluster_reads_total N`, the clusters whose objects
/// were brought in line with the cloud again.
async fn serve_metrics(listener: tokio::net::TcpListener, service: crate::sim::SimService) {
    use std::fmt::Write as _;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let counts = service.call_counts();
            let kube = service.kube_request_counts();
            let reads = service.kube_cluster_reads();
            async move {
                let mut text = String::from(
                    "# HELP fleetbot_sim_calls_total gRPC calls the simulator answered, by method.\n# TYPE fleetbot_sim_calls_total counter\n",
                );
                for (method, n) in &counts {
                    let _ = writeln!(text, "fleetbot_sim_calls_total{{method=\"{method}\"}} {n}");
                }
                text.push_str("# HELP fleetbot_sim_kube_requests_total Requests to the clusters' Kubernetes API, by HTTP method.\n# TYPE fleetbot_sim_kube_requests_total counter\n");
                for (method, n) in &kube {
                    let _ = writeln!(text, "fleetbot_sim_kube_requests_total{{method=\"{method}\"}} {n}");
                }
                text.push_str("# HELP fleetbot_sim_kube_cluster_reads_total Clusters whose Kubernetes objects were brought in line with the cloud again.\n# TYPE fleetbot_sim_kube_cluster_reads_total counter\n");
                let _ = writeln!(text, "fleetbot_sim_kube_cluster_reads_total {reads}");
                text
            }
        }),
    );
    let _ = axum::serve(listener, app).await;
}

/// Ctrl-C, or SIGTERM (how a resident simulator is stopped).
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

pub fn run(args: SimArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fleetbot sim: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let mut world = match &args.world {
            Some(path) => match World::load(path) {
                Ok(world) => world,
                Err(e) => {
                    eprintln!("fleetbot sim: {e}");
                    return ExitCode::from(2);
                }
            },
            None => World::embedded_default(),
        };
        // A resident takes its state's lock before it reads the state: whoever holds it
        // serves the state; a second one started at the same time leaves it to the first.
        let _state_lock = match (args.resident, &args.state) {
            (true, Some(state)) => match crate::fleet::resident::lock(state) {
                Ok(Some(lock)) => Some(lock),
                Ok(None) => {
                    eprintln!(
                        "fleetbot sim: another resident simulator serves {}; leaving it to that one",
                        state.display()
                    );
                    return ExitCode::from(crate::fleet::resident::EXIT_ALREADY_SERVED);
                }
                Err(e) => {
                    eprintln!(
                        "fleetbot sim: cannot lock {}: {e}",
                        crate::fleet::resident::lock_file_of(state).display()
                    );
                    return ExitCode::FAILURE;
                }
            },
            _ => None,
        };
        world.static_tokens.extend(args.tokens.iter().cloned());
        let resident_token = args
            .resident
            .then(|| format!("sim1.{}", uuid::Uuid::new_v4().simple()));
        world.static_tokens.extend(resident_token.iter().cloned());
        if world.static_tokens.is_empty() && world.service_accounts.is_empty() {
            eprintln!(
                "fleetbot sim: no way to authenticate: pass --token (or FLEETBOT_SIM_TOKEN), or list service_accounts or static_tokens in the world"
            );
            return ExitCode::from(2);
        }
        let listener = match tokio::net::TcpListener::bind(args.listen).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fleetbot sim: cannot listen on {}: {e}", args.listen);
                return ExitCode::FAILURE;
            }
        };
        let name = world.name.clone();
        let sim = match Simulator::start(world, args.state.clone(), listener).await {
            Ok(sim) => sim,
            Err(e) => {
                eprintln!("fleetbot sim: {e}");
                return ExitCode::FAILURE;
            }
        };
        // The storage probe runs here as on the embedded simulator: this binary, by digest.
        let probe_image = match crate::fleet::connect::register_this_binary(&sim.kube) {
            Ok(image) => image,
            Err(e) => {
                eprintln!("fleetbot sim: cannot read this binary: {e}");
                return ExitCode::FAILURE;
            }
        };
        println!("fleetbot sim: world {name:?} serving the Nebius API at {}", sim.endpoint());
        println!("  tenant: {}", sim.tenant_id());
        println!("  probe image: {probe_image}");
        // Ready to paste: a static token names no tenant, so the tenant travels beside it, and
        // verification needs the probe image this simulator runs.
        // The token itself is never printed: from FLEETBOT_SIM_TOKEN the line names that
        // variable and pastes as it is; from --token it says where the value goes.
        let token = match std::env::var("FLEETBOT_SIM_TOKEN") {
            Ok(v) if args.tokens.contains(&v) => "\"$FLEETBOT_SIM_TOKEN\"".to_string(),
            _ => "<the --token you passed>".to_string(),
        };
        // A state the embedded default wrote has its inventory beside it: the CLI reading
        // this simulator must read that one too, or it finds nothing deployed.
        let inventory = args
            .state
            .as_ref()
            .map(|s| s.with_extension("inventory.sqlite"))
            .filter(|i| i.is_file())
            .map(|i| format!(" FLEETBOT_INVENTORY={}", i.display()))
            .unwrap_or_default();
        println!(
            "  connect with: export NEBIUS_ENDPOINT={} NEBIUS_IAM_TOKEN={token} FLEETBOT_TENANT_ID={} FLEETBOT_PROBE_IMAGE={probe_image}{inventory}",
            sim.endpoint(),
            sim.tenant_id()
        );
        println!("  Kubernetes API of each running cluster: {}<cluster-id> (`fleetbot kubeconfig` writes a kubeconfig)", sim.kube.base_url);
        if let Some(state) = &args.state {
            println!("  state: {}", state.display());
        }
        if let (Some(token), Some(state)) = (&resident_token, &args.state) {
            let resident = crate::fleet::resident::Resident {
                pid: std::process::id(),
                endpoint: sim.endpoint(),
                tenant_id: sim.tenant_id(),
                token: token.clone(),
                probe_image: probe_image.clone(),
            };
            if let Err(e) = crate::fleet::resident::write(state, &resident) {
                eprintln!("fleetbot sim: cannot write {}: {e}", crate::fleet::resident::file_of(state).display());
                sim.stop().await;
                return ExitCode::FAILURE;
            }
            println!("  resident: stop it with `kill {}`", std::process::id());
        }
        if let Some(addr) = args.metrics {
            match tokio::net::TcpListener::bind(addr).await {
                Ok(listener) => {
                    println!("  metrics: http://{addr}/metrics");
                    tokio::spawn(serve_metrics(listener, sim.service.clone()));
                }
                Err(e) => {
                    eprintln!("fleetbot sim: cannot listen on {addr} for metrics: {e}");
                    sim.stop().await;
                    return ExitCode::FAILURE;
                }
            }
        }
        stopped().await;
        eprintln!("fleetbot sim: stopping");
        if let (true, Some(state)) = (args.resident, &args.state) {
            crate::fleet::resident::remove(state);
        }
        sim.stop().await;
        ExitCode::SUCCESS
    })
}
