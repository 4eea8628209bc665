//! The clock every timestamp in a message is read from: wall time since the Unix epoch.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_micros() as i64).unwrap_or(0)
}

pub fn now_ms() -> i64 {
    now_us() / 1000
}
