//! The cluster secret, and how a connection proves it without sending it.
//!
//! Each side's hello carries a fresh random nonce. Each side then sends
//! `HMAC-SHA256(secret, DOMAIN ‖ its role ‖ its nonce ‖ the peer's nonce)` and checks the
//! peer's proof the same way, then says whether it accepted. A recorded handshake is worth
//! nothing later: the verifier's nonce is new on every connection, so an old proof never
//! matches it. The secret never crosses the wire, and a side without it cannot make a proof.
//!
//! Every connection of a process proves the same secret (one cluster, one secret), so it is
//! set once for the process (`set_process_secret`) rather than passed to each of the many
//! places that connect.

use std::path::Path;
use std::sync::OnceLock;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The bytes every proof starts with: a proof made for anything else never verifies here.
const DOMAIN: &[u8] = b"sleet cluster handshake v1";
/// The label of the API token derived from the secret.
const API_TOKEN_DOMAIN: &[u8] = b"sleet http api token v1";
/// The environment variable a process reads its secret from when no file is given.
pub const SECRET_ENV: &str = "SLEET_SECRET";
/// Shorter secrets are refused: a guessable secret would make the proof a formality.
pub const SECRET_BYTES_MIN: usize = 16;
pub const NONCE_BYTES: usize = 32;
pub const PROOF_BYTES: usize = 32;

pub type Nonce = [u8; NONCE_BYTES];

/// A cluster secret. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

impl Secret {
    /// A secret from its text; surrounding whitespace (a file's newline) is not part of it.
    pub fn new(text: &str) -> Result<Secret, String> {
        let trimmed = text.trim();
        if trimmed.len() < SECRET_BYTES_MIN {
            return Err(format!(
                "the cluster secret is {} bytes long; it needs at least {SECRET_BYTES_MIN} (e.g. `head -c 32 /dev/urandom | base64`)",
                trimmed.len()
            ));
        }
        Ok(Secret(trimmed.as_bytes().to_vec()))
    }

    pub fn from_file(path: &Path) -> Result<Secret, String> {
        let text = std::fs::read_to_string(path).map_err(|error| format!("reading {}: {error}", path.display()))?;
        Secret::new(&text).map_err(|reason| format!("{}: {reason}", path.display()))
    }

    /// The secret of `--secret-file`, else of `SLEET_SECRET`, else none.
    pub fn configured(file: Option<&Path>) -> Result<Option<Secret>, String> {
        if let Some(path) = file {
            return Secret::from_file(path).map(Some);
        }
        match std::env::var(SECRET_ENV) {
            Ok(text) => Secret::new(&text).map(Some).map_err(|reason| format!("{SECRET_ENV}: {reason}")),
            Err(_) => Ok(None),
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    /// The proof the side with role byte `role` and nonce `mine` sends to the side whose
    /// nonce is `theirs`.
    pub fn proof(&self, role: u8, mine: &Nonce, theirs: &Nonce) -> [u8; PROOF_BYTES] {
        let mut mac = self.mac();
        mac.update(DOMAIN);
        mac.update(&[role]);
        mac.update(mine);
        mac.update(theirs);
        mac.finalize().into_bytes().into()
    }

    /// Whether `proof` is the peer's (role `role`, nonce `theirs`) for our nonce `mine`;
    /// compared in constant time.
    pub fn verify(&self, proof: &[u8], role: u8, theirs: &Nonce, mine: &Nonce) -> bool {
        let mut mac = self.mac();
        mac.update(DOMAIN);
        mac.update(&[role]);
        mac.update(theirs);
        mac.update(mine);
        mac.verify_slice(proof).is_ok()
    }

    /// The bearer token of the driver's HTTP API: derived from the secret, so whoever holds
    /// the secret can compute it (`sleet token`), and showing it reveals nothing of the secret.
    pub fn api_token(&self) -> String {
        let mut mac = self.mac();
        mac.update(API_TOKEN_DOMAIN);
        mac.finalize().into_bytes().iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

/// A fresh nonce from the operating system's generator.
pub fn nonce() -> Nonce {
    let mut nonce = [0u8; NONCE_BYTES];
    getrandom::fill(&mut nonce).expect("the operating system's random generator answers");
    nonce
}

static PROCESS_SECRET: OnceLock<Option<Secret>> = OnceLock::new();

/// Sets the secret every connection of this process proves, once, before the first
/// connection; false when it was already set.
pub fn set_process_secret(secret: Option<Secret>) -> bool {
    PROCESS_SECRET.set(secret).is_ok()
}

/// The process's secret; none when it was never set.
pub fn process_secret() -> Option<&'static Secret> {
    PROCESS_SECRET.get().and_then(Option::as_ref)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(text: &str) -> Secret {
        Secret::new(text).expect("long enough")
    }

    #[test]
    fn a_proof_verifies_only_with_the_same_secret_role_and_nonces() {
        let (driver_nonce, worker_nonce) = (nonce(), nonce());
        assert_ne!(driver_nonce, worker_nonce, "fresh nonces");
        let ours = secret("a secret of the cluster");
        let proof = ours.proof(2, &worker_nonce, &driver_nonce);
        assert!(ours.verify(&proof, 2, &worker_nonce, &driver_nonce));
        assert!(!secret("another secret of a cluster").verify(&proof, 2, &worker_nonce, &driver_nonce));
        assert!(!ours.verify(&proof, 3, &worker_nonce, &driver_nonce), "another role");
        assert!(!ours.verify(&proof, 2, &worker_nonce, &nonce()), "replayed against a new nonce");
        assert!(!ours.verify(&proof, 2, &driver_nonce, &worker_nonce), "the nonces swapped");
        assert!(!ours.verify(&proof[..31], 2, &worker_nonce, &driver_nonce), "a truncated proof");
    }

    #[test]
    fn short_secrets_are_refused_and_whitespace_is_not_part_of_one() {
        let error = Secret::new("short").expect_err("too short");
        assert!(error.contains("at least 16"), "{error}");
        assert_eq!(secret("  0123456789abcdef\n"), secret("0123456789abcdef"));
        assert_eq!(format!("{:?}", secret("0123456789abcdef")), "Secret(16 bytes)", "never shown");
    }

    #[test]
    fn the_api_token_is_derived_and_reveals_nothing_of_the_secret() {
        let ours = secret("0123456789abcdef0123");
        let token = ours.api_token();
        assert_eq!(token.len(), 64);
        assert_eq!(token, secret("0123456789abcdef0123").api_token(), "a function of the secret");
        assert_ne!(token, secret("0123456789abcdef0124").api_token());
        assert!(!token.contains("0123456789abcdef"));
    }
}
