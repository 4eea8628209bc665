//! `sleet driver --http`: the console (sleet-console) served beside the driver, with the front
//! ends only the binary links: the SQL compiler for scripts posted to the API, EXPLAIN's text
//! of a job's plan, and the what-if assumptions `sleet explain` makes.

use std::sync::Arc;

use anyhow::{Context, Result};
use sleet_clarity::{RunSamples, WhatIfParams};
use sleet_driver::DriverHandles;
use sleet_plan::JobFile;
use sleet_wire::auth::Secret;
use tokio::net::TcpListener;

use crate::clarity_report::whatif_params;
use crate::sql_file::{compile_sql_text, SqlDefaults};

/// The line a driver serving the console prints on stdout, after its address.
pub const SERVING_PREFIX: &str = "sleet driver: dashboard and API on http://";

struct BinaryFrontend;

impl sleet_console::Frontend for BinaryFrontend {
    fn compile_sql(&self, text: &str) -> Result<JobFile, String> {
        let defaults = SqlDefaults::here(sleet_wire::clock::now_ms()).map_err(|error| format!("{error:#}"))?;
        match compile_sql_text("posted", text, &defaults).map_err(|error| format!("{error:#}"))? {
            sleet_sql::Compiled::Job(job) => Ok(job),
            sleet_sql::Compiled::Explain(_) => {
                Err("an EXPLAIN script runs nothing: GET /v1/jobs/{id} shows a job's plan".into())
            }
        }
    }

    fn explain(&self, job: &JobFile) -> Option<String> {
        sleet_sql::explain(job).ok()
    }

    fn whatif_params(&self, job: &JobFile, run: &RunSamples) -> WhatIfParams {
        whatif_params(run, job.settings.combine, None, None)
    }
}

/// Binds the console's address: beyond loopback only with a cluster secret, whose token the
/// API then asks for.
pub async fn bind(address: &str, secret: Option<&Secret>) -> Result<TcpListener> {
    crate::security::check_exposure("--http", address, secret)?;
    TcpListener::bind(address).await.with_context(|| format!("--http {address}: cannot listen there"))
}

/// What the driver calls once it listens: the console starts on `listener`, and its URL goes
/// to stdout after the driver's address. With a secret, every API call must show its token.
pub fn serve_beside(listener: TcpListener, secret: Option<Secret>) -> impl FnOnce(DriverHandles) {
    move |driver: DriverHandles| {
        let address = listener.local_addr().map_or_else(|_| "?".to_string(), |address| address.to_string());
        driver.live.served_at(address.clone());
        println!("{SERVING_PREFIX}{address}/");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        if secret.is_some() {
            eprintln!("sleet driver: the API asks for the cluster's token (`sleet token` prints it)");
        }
        let token = secret.map(|secret| secret.api_token());
        // On a thread and a one-thread runtime of its own: a request then wakes that thread
        // alone, never the driver's runtime workers, whose wake-ups would cost the scheduling
        // path more than serving the request does.
        let listener = match listener.into_std() {
            Ok(listener) => listener,
            Err(error) => return eprintln!("sleet driver: the console did not start: {error}"),
        };
        let spawned = std::thread::Builder::new().name("sleet-console".into()).spawn(move || {
            let served = tokio::runtime::Builder::new_current_thread().enable_all().build().and_then(|runtime| {
                runtime.block_on(async {
                    let listener = TcpListener::from_std(listener)?;
                    sleet_console::serve(listener, driver, Arc::new(BinaryFrontend), token).await
                })
            });
            if let Err(error) = served {
                eprintln!("sleet driver: the console stopped: {error}");
            }
        });
        if let Err(error) = spawned {
            eprintln!("sleet driver: the console did not start: {error}");
        }
    }
}
