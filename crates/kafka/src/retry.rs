//! Retrying a call to the brokers while it fails in a way that waiting can fix.

use std::time::{Duration, Instant};

use crate::error::KafkaError;

/// Long enough to ride out a broker restart.
const RETRY_FOR: Duration = Duration::from_secs(60);
/// The first retry comes soon (a transaction coordinator finishing the previous
/// transaction, a new topic's leader being elected: milliseconds), later ones back off to
/// this.
const RETRY_BACKOFF_FIRST: Duration = Duration::from_millis(2);
const RETRY_BACKOFF_MAX: Duration = Duration::from_millis(250);

/// Runs `attempt` until it succeeds, fails for good, or has failed transiently for
/// `RETRY_FOR`, with backoff doubling from `RETRY_BACKOFF_FIRST` to `RETRY_BACKOFF_MAX`.
pub fn retry_transient<T>(attempt: impl FnMut() -> Result<T, KafkaError>) -> Result<T, KafkaError> {
    retry_while(KafkaError::is_transient, attempt)
}

/// `retry_transient` with the caller's idea of which errors are worth another try.
pub fn retry_while<T>(
    retry: impl Fn(&KafkaError) -> bool,
    mut attempt: impl FnMut() -> Result<T, KafkaError>,
) -> Result<T, KafkaError> {
    let deadline = Instant::now() + RETRY_FOR;
    let mut backoff = RETRY_BACKOFF_FIRST;
    loop {
        match attempt() {
            Err(error) if retry(&error) && Instant::now() + backoff < deadline => {
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(RETRY_BACKOFF_MAX);
            }
            outcome => return outcome,
        }
    }
}
