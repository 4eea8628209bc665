//! One driver per checkpoint directory. Job ids start at 1 in every driver, so two drivers
//! sharing a checkpoint directory would write each other's checkpoint records, and the
//! second would take the first's running job from the state directory as its own to resume.
//! The lock is an advisory `flock` the kernel drops when its holder dies, so a driver killed
//! with SIGKILL never leaves a directory locked.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::DriverError;

const LOCK_FILE: &str = "driver.lock";
/// How long a starting driver waits for the directory: a driver restarted right after it
/// was killed may start before the kernel has closed its predecessor's files.
pub const LOCK_WAIT: Duration = Duration::from_secs(3);
const LOCK_RETRY_PAUSE: Duration = Duration::from_millis(50);

/// Held for the driver's life; dropping it releases the directory.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Locks `dir` for this process, waiting up to `wait` for a holder to go away.
pub fn lock_checkpoint_dir(dir: &Path, wait: Duration) -> Result<DirLock, DriverError> {
    let path = dir.join(LOCK_FILE);
    let io_error = |error: std::io::Error| DriverError::DirLock { path: path.clone(), source: error };
    let mut file =
        OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io_error)?;
    let deadline = Instant::now() + wait;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => std::thread::sleep(LOCK_RETRY_PAUSE),
            Err(TryLockError::WouldBlock) => {
                return Err(DriverError::DirInUse { holder: holder_of(&mut file), path });
            }
            Err(TryLockError::Error(error)) => return Err(io_error(error)),
        }
    }
    // The pid is for the message a second driver prints; the lock itself is the flock.
    file.set_len(0).map_err(io_error)?;
    file.rewind().map_err(io_error)?;
    write!(file, "{}", std::process::id()).map_err(io_error)?;
    Ok(DirLock { _file: file })
}

fn holder_of(file: &mut File) -> String {
    let mut pid = String::new();
    let _ = file.rewind().and_then(|()| file.read_to_string(&mut pid));
    match pid.trim() {
        "" => "another driver".to_string(),
        pid => format!("the driver with pid {pid}"),
    }
}

/// Where the lock of `dir` lives, for messages and tests.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_held_directory_is_refused_naming_the_holder() {
        let dir = std::env::temp_dir().join(format!("sleet-dir-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let held = lock_checkpoint_dir(&dir, Duration::ZERO).expect("a free directory locks");
        let refused = lock_checkpoint_dir(&dir, Duration::from_millis(120)).expect_err("a held directory is refused");
        let message = refused.to_string();
        assert!(message.contains(&std::process::id().to_string()), "{message}");
        assert!(message.contains(&lock_path(&dir).display().to_string()), "{message}");
        drop(held);
        let again = lock_checkpoint_dir(&dir, Duration::ZERO);
        assert!(again.is_ok(), "a released directory locks again: {again:?}");
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
