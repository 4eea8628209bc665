//! A real headless Chromium, driven over its DevTools protocol, for the dashboard's tests.
//!
//! The protocol rather than `--dump-dom`: the page holds an event stream open, and Chromium's
//! `--virtual-time-budget` waits for open requests, so a dump never returns. Chromium is
//! Debian's, installed by `scripts/chromium.sh` (which the test runs if it is missing).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Bound on every wait for the browser.
const BROWSER_WAIT: Duration = Duration::from_secs(30);

pub struct Browser {
    child: Child,
    profile: PathBuf,
    endpoint: String,
}

/// The path of Chromium, installing Debian's package first if there is none.
fn chromium() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/chromium.sh");
    let output =
        Command::new(&script).arg("ensure").stderr(Stdio::inherit()).output().expect("scripts/chromium.sh ran");
    assert!(output.status.success(), "scripts/chromium.sh ensure failed: Chromium is needed for the dashboard's test");
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

impl Browser {
    /// Starts headless Chromium (1280×900) with a profile of its own, listening for the
    /// protocol on a loopback port it picks.
    pub fn launch(profile: &Path) -> Browser {
        let _ = std::fs::remove_dir_all(profile);
        std::fs::create_dir_all(profile).expect("a profile directory");
        let child = Command::new(chromium())
            .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
            .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
            .args(["--window-size=1280,900", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0"])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting chromium");
        // Chromium writes its port and the browser's protocol path here once it listens.
        let port_file = profile.join("DevToolsActivePort");
        let started = Instant::now();
        let endpoint = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{port}{path}");
                }
            }
            assert!(
                started.elapsed() < BROWSER_WAIT,
                "chromium did not open its protocol port within {BROWSER_WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        Browser { child, profile: profile.to_path_buf(), endpoint }
    }

    /// Opens `url` in a new tab.
    pub async fn open(&self, url: &str) -> Page {
        let (socket, _) =
            tokio_tungstenite::connect_async(&self.endpoint).await.expect("the browser's protocol socket");
        let mut page = Page { socket, session: None, next_id: 0 };
        let target = page.call("Target.createTarget", json!({ "url": url })).await;
        let target_id = target["targetId"].as_str().expect("a target id").to_string();
        let attached = page.call("Target.attachToTarget", json!({ "targetId": target_id, "flatten": true })).await;
        page.session = Some(attached["sessionId"].as_str().expect("a session").to_string());
        page
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

pub struct Page {
    socket: Socket,
    session: Option<String>,
    next_id: u64,
}

impl Page {
    /// One protocol call; its result (a protocol error fails the test).
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        self.socket.send(Message::text(message.to_string())).await.expect("sent to the browser");
        let deadline = tokio::time::Instant::now() + BROWSER_WAIT;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("{method}: no answer within {BROWSER_WAIT:?}"))
                .expect("the browser's socket is open")
                .expect("a frame");
            let Message::Text(text) = frame else { continue };
            let answer: Value = serde_json::from_str(&text).expect("JSON from the browser");
            if answer["id"] != id {
                continue; // an event, or another call's answer
            }
            assert!(answer.get("error").is_none(), "{method}: {answer}");
            return answer["result"].clone();
        }
    }

    /// The value of a JavaScript expression in the page.
    pub async fn evaluate(&mut self, expression: &str) -> Value {
        let result = self.call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true })).await;
        assert!(result.get("exceptionDetails").is_none(), "{expression}: {result}");
        result["result"]["value"].clone()
    }

    /// Evaluates `expression` until it is true, within `limit`; one that throws (the page not
    /// loaded yet) counts as false.
    pub async fn wait_until(&mut self, expression: &str, limit: Duration) {
        let started = Instant::now();
        let guarded = format!("(() => {{ try {{ return Boolean({expression}); }} catch (_) {{ return false; }} }})()");
        while self.evaluate(&guarded).await != json!(true) {
            assert!(started.elapsed() < limit, "the page never got to `{expression}` within {limit:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A PNG of the page as it shows now.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let shot = self.call("Page.captureScreenshot", json!({ "format": "png" })).await;
        base64::engine::general_purpose::STANDARD.decode(shot["data"].as_str().expect("image data")).expect("base64")
    }
}
