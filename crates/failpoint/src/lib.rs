//! Failpoints: named places at the edges of the commit protocol where a test can make the
//! process die, to check that a crash exactly there loses and duplicates nothing.
//!
//! ```text
//!  SLEET_FAILPOINTS=driver-after-manifest=exit@3,worker-after-sink-write=abort
//!        │ read once at start (arm_from_env)
//!        ▼
//!  hit("driver-after-manifest") ── unarmed: one relaxed atomic load, nothing else
//!                               └─ armed: count the hit; at the nth, exit or abort
//! ```
//!
//! Compiled into every build so that the binary a test arms is the binary users run; the
//! price when nothing is armed is the load of one flag per hit.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable that arms failpoints.
pub const ENV_VAR: &str = "SLEET_FAILPOINTS";

/// The exit code of a process that a failpoint ended with `exit`: distinct, so a test can
/// tell it from a crash of its own.
pub const EXIT_CODE: i32 = 86;

/// Every failpoint there is: an armed name outside this list is a typo, refused at start.
pub const NAMES: &[&str] = &[
    "driver-before-checkpoint-record",
    "driver-after-checkpoint-record",
    "driver-before-manifest",
    "driver-after-manifest",
    "worker-after-sink-write",
];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FailpointError {
    /// The user's `SLEET_FAILPOINTS` is malformed; names the entry and what is wrong.
    #[error("{ENV_VAR}: entry `{entry}`: {reason}")]
    Invalid { entry: String, reason: String },
}

/// What an armed failpoint does when its turn comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `std::process::exit(EXIT_CODE)`: no destructors, no flush of buffered writers.
    Exit,
    /// `std::process::abort()`: as a SIGKILL would leave things, with a core dump if enabled.
    Abort,
}

/// One armed failpoint: `name` acts at its `nth` hit (1 for the first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arming {
    pub name: String,
    pub action: Action,
    pub nth: u64,
}

/// Parses `name=action[@nth],…`; an empty text arms nothing.
pub fn parse(text: &str) -> Result<Vec<Arming>, FailpointError> {
    let mut armings = Vec::new();
    for entry in text.split(',').map(str::trim).filter(|entry| !entry.is_empty()) {
        let invalid = |reason: &str| FailpointError::Invalid { entry: entry.to_string(), reason: reason.to_string() };
        let (name, rest) = entry.split_once('=').ok_or_else(|| invalid("expected name=action[@nth]"))?;
        if !NAMES.contains(&name) {
            return Err(invalid(&format!("no failpoint is named `{name}`; there are {}", NAMES.join(", "))));
        }
        let (action, nth) = match rest.split_once('@') {
            Some((action, nth)) => {
                let nth: u64 = nth.parse().map_err(|_| invalid("the hit after @ must be a whole number"))?;
                (action, nth)
            }
            None => (rest, 1),
        };
        if nth == 0 {
            return Err(invalid("hits count from 1"));
        }
        let action = match action {
            "exit" => Action::Exit,
            "abort" => Action::Abort,
            _ => return Err(invalid("the action must be `exit` or `abort`")),
        };
        if armings.iter().any(|arming: &Arming| arming.name == name) {
            return Err(invalid("armed twice"));
        }
        armings.push(Arming { name: name.to_string(), action, nth });
    }
    Ok(armings)
}

struct Armed {
    arming: Arming,
    hits: AtomicU64,
}

static ARMED: AtomicBool = AtomicBool::new(false);
static POINTS: OnceLock<Vec<Armed>> = OnceLock::new();

/// Arms the failpoints `SLEET_FAILPOINTS` names; call once, at the start of the process.
/// Returns what was armed, for the process to say so in its log.
pub fn arm_from_env() -> Result<Vec<Arming>, FailpointError> {
    let text = std::env::var(ENV_VAR).unwrap_or_default();
    let armings = parse(&text)?;
    if !armings.is_empty() {
        let points = armings.iter().map(|arming| Armed { arming: arming.clone(), hits: AtomicU64::new(0) }).collect();
        if POINTS.set(points).is_ok() {
            ARMED.store(true, Ordering::Release);
        }
    }
    Ok(armings)
}

/// The process passes the failpoint `name`.
#[inline]
pub fn hit(name: &'static str) {
    if ARMED.load(Ordering::Relaxed) {
        hit_armed(name);
    }
}

#[cold]
fn hit_armed(name: &'static str) {
    debug_assert!(NAMES.contains(&name), "failpoint `{name}` is not in NAMES");
    let Some(point) = POINTS.get().and_then(|points| points.iter().find(|point| point.arming.name == name)) else {
        return;
    };
    let hits = point.hits.fetch_add(1, Ordering::AcqRel) + 1;
    if hits != point.arming.nth {
        return;
    }
    eprintln!("sleet: failpoint {name} at hit {hits}: {:?}", point.arming.action);
    match point.arming.action {
        Action::Exit => std::process::exit(EXIT_CODE),
        Action::Abort => std::process::abort(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<Vec<(&str, Action, u64)>, &str>) {
        let parsed = parse(text).map(|armings| {
            armings.into_iter().map(|arming| (arming.name, arming.action, arming.nth)).collect::<Vec<_>>()
        });
        match (parsed, expected) {
            (Ok(parsed), Ok(expected)) => {
                let expected: Vec<_> =
                    expected.into_iter().map(|(name, action, nth)| (name.to_string(), action, nth)).collect();
                assert_eq!(parsed, expected, "{text}");
            }
            (Err(error), Err(fragment)) => assert!(error.to_string().contains(fragment), "{text}: {error}"),
            (parsed, expected) => panic!("{text}: parsed {parsed:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn armings_parse_and_mistakes_are_named() {
        check("", Ok(vec![]));
        check(" , ", Ok(vec![]));
        check("driver-after-manifest=exit", Ok(vec![("driver-after-manifest", Action::Exit, 1)]));
        check(
            "driver-before-manifest=abort@3, worker-after-sink-write=exit@12",
            Ok(vec![("driver-before-manifest", Action::Abort, 3), ("worker-after-sink-write", Action::Exit, 12)]),
        );
        check("driver-after-manifest", Err("expected name=action"));
        check("driver-after-manfest=exit", Err("no failpoint is named `driver-after-manfest`"));
        check("driver-after-manifest=panic", Err("must be `exit` or `abort`"));
        check("driver-after-manifest=exit@0", Err("count from 1"));
        check("driver-after-manifest=exit@x", Err("whole number"));
        check("driver-after-manifest=exit,driver-after-manifest=abort", Err("armed twice"));
    }

    #[test]
    fn an_unarmed_failpoint_does_nothing() {
        // Nothing in this test process armed any: passing one must simply return.
        for name in NAMES {
            hit(name);
        }
    }
}
