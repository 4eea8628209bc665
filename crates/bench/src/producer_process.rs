//! A `sleet gen …` child process, which writes what it produced as one JSON object on its
//! standard output when it ends; its CPU time comes from `wait4`, which reaps it.

use std::marker::PhantomData;
use std::process::Stdio;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;

use crate::cluster::child_command;

/// A running producer; killed if dropped before `finish`.
pub struct ProducerProcess<Produced> {
    child: Option<std::process::Child>,
    produced: PhantomData<fn() -> Produced>,
}

impl<Produced> Drop for ProducerProcess<Produced> {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub struct ProducerRun<Produced> {
    pub produced: Produced,
    pub cpu_seconds: Option<f64>,
}

impl<Produced: DeserializeOwned + Send + 'static> ProducerProcess<Produced> {
    /// `sleet ARGS…`, e.g. `["gen", "ysb", …]`.
    pub fn start(args: &[String]) -> Result<Self> {
        let exe = crate::cluster::sleet_exe()?;
        let child = child_command(&exe)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| {
                format!("starting the producer (sleet {})", args.iter().take(2).cloned().collect::<Vec<_>>().join(" "))
            })?;
        Ok(ProducerProcess { child: Some(child), produced: PhantomData })
    }

    /// Waits for the producer to end and reads what it produced.
    pub async fn finish(mut self) -> Result<ProducerRun<Produced>> {
        let mut child = self.child.take().context("the producer was already waited for")?;
        let pid = child.id() as libc::pid_t;
        let mut stdout = child.stdout.take().context("producer stdout")?;
        let (status, usage, output) = tokio::task::spawn_blocking(move || {
            let mut output = String::new();
            std::io::Read::read_to_string(&mut stdout, &mut output).ok();
            let mut status = 0;
            // SAFETY: an all-zero rusage is valid; wait4 fills it for our own child.
            let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: waits for our own child process, with valid pointers.
            let reaped = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            (if reaped == pid { Some(status) } else { None }, usage, output)
        })
        .await?;
        let seconds = |time: libc::timeval| time.tv_sec as f64 + time.tv_usec as f64 / 1e6;
        let cpu = status.map(|_| seconds(usage.ru_utime) + seconds(usage.ru_stime));
        anyhow::ensure!(
            status.is_some_and(|status| libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0),
            "the producer failed; its messages are above"
        );
        let produced = serde_json::from_str(output.trim()).context("reading what the producer wrote")?;
        Ok(ProducerRun { produced, cpu_seconds: cpu })
    }
}
