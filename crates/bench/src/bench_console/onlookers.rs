//! Who looks at the console during an `on` run: one dashboard page in headless Chromium,
//! following the driver's stream as a user's would, and a Prometheus-style scraper of
//! `/metrics` once a second. Each counts what it got, which proves it really looked.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::browser::{Browser, Page};

/// Prometheus' shortest usual scrape interval, and what the issue asks for.
const SCRAPE_EVERY: Duration = Duration::from_secs(1);
/// A scrape slower than this counts as unanswered: the next one is due.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(1);
/// The page loads its script and opens the stream within seconds on an idle driver.
const PAGE_READY: Duration = Duration::from_secs(30);

/// The page's count of the stream's updates it applied (`dashboard.js`, `countUpdate`).
const UPDATES: &str = "Number(document.body.dataset.updates)";

pub struct Onlookers {
    // Declared before the browser so the protocol socket closes before Chromium is killed.
    page: Page,
    browser: Browser,
    scraper: Scraper,
}

/// What the onlookers got over the run.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    pub page_updates: u64,
    pub scrapes: u64,
    pub failed_scrapes: u64,
}

impl Onlookers {
    /// Opens the dashboard of the driver serving on `http` and waits for its first update, so
    /// the page is live (and Chromium's start-up over) before the job is submitted; then
    /// starts scraping.
    pub async fn start(http: &str, profile: &Path) -> Result<Onlookers> {
        let browser = Browser::launch(profile);
        let mut page = browser.open(&format!("http://{http}/")).await;
        page.wait_until(&format!("{UPDATES} >= 1"), PAGE_READY).await;
        let scraper = Scraper::start(http)?;
        Ok(Onlookers { page, browser, scraper })
    }

    /// Stops scraping, reads the page's count and closes the browser.
    pub async fn finish(mut self) -> Result<Seen> {
        let (scrapes, failed_scrapes) = self.scraper.finish()?;
        let updates = self.page.evaluate(UPDATES).await;
        let page_updates = updates.as_u64().with_context(|| format!("the page's update count is {updates}"))?;
        drop(self.page);
        drop(self.browser);
        Ok(Seen { page_updates, scrapes, failed_scrapes })
    }
}

/// A thread that GETs `/metrics` every `SCRAPE_EVERY` until stopped. A thread of its own
/// rather than a task: ureq blocks, and the runtime's two threads follow the job.
struct Scraper {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<(u64, u64)>,
}

impl Scraper {
    fn start(http: &str) -> Result<Scraper> {
        let url = format!("http://{http}/metrics");
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(SCRAPE_TIMEOUT))
            .build()
            .into();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("metrics-scraper".into())
            .spawn(move || {
                let (mut answered, mut failed) = (0, 0);
                // On a fixed cadence, as Prometheus scrapes: a slow answer does not push the
                // next scrape later.
                let mut next = Instant::now();
                loop {
                    match stopped.recv_timeout(next.saturating_duration_since(Instant::now())) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => return (answered, failed),
                    }
                    match scrape(&agent, &url) {
                        Ok(()) => answered += 1,
                        Err(error) => {
                            // The first few say why; the count says how often.
                            if failed < 3 {
                                eprintln!("  scrape of {url} failed: {error:#}");
                            }
                            failed += 1;
                        }
                    }
                    next += SCRAPE_EVERY;
                }
            })
            .context("starting the metrics scraper's thread")?;
        Ok(Scraper { stop, thread })
    }

    /// Scrapes answered and failed.
    fn finish(self) -> Result<(u64, u64)> {
        let Scraper { stop, thread } = self;
        drop(stop);
        thread.join().map_err(|_| anyhow!("the metrics scraper's thread panicked"))
    }
}

/// One scrape, read to its end as Prometheus reads it.
fn scrape(agent: &ureq::Agent, url: &str) -> Result<()> {
    let mut response = agent.get(url).call()?;
    let status = response.status().as_u16();
    let body = response.body_mut().read_to_string()?;
    anyhow::ensure!(status == 200, "status {status}: {body}");
    anyhow::ensure!(body.contains("sleet_workers"), "no sleet_workers series in the answer: {body}");
    Ok(())
}

/// The console thread's CPU seconds so far, from its metrics at `http`.
pub fn console_cpu_seconds(http: &str) -> Result<f64> {
    let agent: ureq::Agent = ureq::Agent::config_builder().timeout_global(Some(Duration::from_secs(10))).build().into();
    let body = agent.get(format!("http://{http}/metrics")).call()?.body_mut().read_to_string()?;
    body.lines()
        .find_map(|line| line.strip_prefix("sleet_console_cpu_seconds_total ")?.trim().parse().ok())
        .ok_or_else(|| anyhow!("no sleet_console_cpu_seconds_total in the metrics of http://{http}"))
}
