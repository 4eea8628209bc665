//! Records in flight, bounded by count and by bytes: a request is admitted whole or not at
//! all, and its share is given back only when the Kafka writer is done with its records
//! (written, refused or abandoned), so the bound holds for memory the writer still uses.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::refusal::Refusal;

pub struct InFlight {
    records: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
    records_max: u32,
    bytes_max: u32,
}

/// A request's share of the in-flight bound; dropping it gives the share back.
pub struct Admission {
    _records: OwnedSemaphorePermit,
    _bytes: OwnedSemaphorePermit,
}

impl InFlight {
    pub fn new(records_max: u32, bytes_max: u32) -> Self {
        InFlight {
            records: Arc::new(Semaphore::new(records_max as usize)),
            bytes: Arc::new(Semaphore::new(bytes_max as usize)),
            records_max,
            bytes_max,
        }
    }

    /// Admits `records` records of `bytes` bytes now, or refuses: too large ever to fit, or
    /// no room at the moment (the client should retry later). Never waits, so a full server
    /// answers at once instead of holding connections open.
    pub fn admit(&self, records: usize, bytes: usize) -> Result<Admission, Refusal> {
        if records > self.records_max as usize || bytes > self.bytes_max as usize {
            return Err(Refusal::TooLarge(format!(
                "{records} records of {bytes} bytes exceed what the server holds in flight ({} records, {} bytes)",
                self.records_max, self.bytes_max
            )));
        }
        let busy = || {
            Refusal::Overloaded(format!(
                "records in flight are at the server's bound ({} records, {} bytes)",
                self.records_max, self.bytes_max
            ))
        };
        let records = Arc::clone(&self.records).try_acquire_many_owned(records as u32).map_err(|_| busy())?;
        let bytes = Arc::clone(&self.bytes).try_acquire_many_owned(bytes as u32).map_err(|_| busy())?;
        Ok(Admission { _records: records, _bytes: bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_up_to_the_bound_and_gives_back_on_drop() {
        let in_flight = InFlight::new(10, 1000);
        let first = in_flight.admit(6, 100).expect("room for six");
        assert!(matches!(in_flight.admit(5, 100), Err(Refusal::Overloaded(_))), "eleven records would be over");
        let second = in_flight.admit(4, 100).expect("room for four more");
        drop(first);
        let third = in_flight.admit(6, 800).expect("the first request's share is back");
        drop(second);
        assert!(matches!(in_flight.admit(11, 1), Err(Refusal::TooLarge(_))));
        assert!(matches!(in_flight.admit(1, 1001), Err(Refusal::TooLarge(_))));
        assert!(matches!(in_flight.admit(3, 201), Err(Refusal::Overloaded(_))), "the bytes bound binds too");
        assert!(in_flight.admit(4, 200).is_ok(), "up to both bounds exactly");
        drop(third);
    }
}
