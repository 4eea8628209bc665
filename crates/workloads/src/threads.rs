//! Joining the `gen` commands' partition threads: the first failure is the run's, and a
//! panicked thread is a failure too.

use std::thread::JoinHandle;

/// Waits for every thread and returns the first error among them (a panic as a `role`
/// thread's); none if all succeeded.
pub(crate) fn join_all(handles: Vec<JoinHandle<anyhow::Result<()>>>, role: &str) -> Option<anyhow::Error> {
    let mut failure = None;
    for handle in handles {
        let outcome = handle.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a {role} thread panicked")));
        if let Err(error) = outcome {
            failure = failure.or(Some(error));
        }
    }
    failure
}
