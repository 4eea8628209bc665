//! What keeps a cluster to itself, as the `sleet` commands take it: the cluster secret
//! (`--secret-file`, or `SLEET_SECRET`) every connection proves, TLS on every connection
//! (`--tls-cert`, `--tls-key`, `--tls-ca`, or `SLEET_TLS_*`), both installed for the whole
//! process (`sleet_wire::auth`, `sleet_wire::tls`); and the rule that without a secret a
//! driver serves this machine only. The environment variables let a local cluster's children
//! inherit what their parent was given.

use std::net::ToSocketAddrs;
use std::path::PathBuf;

use anyhow::{Context, Result};
use sleet_wire::auth::{self, Secret};
use sleet_wire::tls::{Tls, TlsFiles};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct SecurityArgs {
    /// A file holding the cluster secret (at least 16 bytes), which the driver, every worker
    /// and every client must share: each connection proves it without sending it. Without this
    /// flag the SLEET_SECRET environment variable is read; without either, nothing is proven
    /// and the driver serves loopback addresses only.
    #[arg(long)]
    pub secret_file: Option<PathBuf>,
    /// This process's TLS certificate chain (PEM), signed by the cluster's CA for the address
    /// others dial it at; drivers and workers need one [env: SLEET_TLS_CERT].
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM) [env: SLEET_TLS_KEY].
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
    /// The cluster's CA certificate (PEM): with it every connection this process makes or
    /// accepts is TLS, and a peer must show a certificate it signed [env: SLEET_TLS_CA].
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
}

/// A flag's value, else its environment variable's.
fn flag_or_env(flag: &Option<PathBuf>, variable: &str) -> Option<PathBuf> {
    flag.clone().or_else(|| std::env::var_os(variable).map(PathBuf::from))
}

impl SecurityArgs {
    /// Reads the secret and the TLS files and makes them this process's; a process that
    /// `serves` connections (a driver, a worker) needs a certificate when TLS is on.
    pub fn install(&self, serves: bool) -> Result<Option<Secret>> {
        let secret = Secret::configured(self.secret_file.as_deref()).map_err(anyhow::Error::msg)?;
        auth::set_process_secret(secret.clone());
        let cert = flag_or_env(&self.tls_cert, "SLEET_TLS_CERT");
        let key = flag_or_env(&self.tls_key, "SLEET_TLS_KEY");
        let tls = match flag_or_env(&self.tls_ca, "SLEET_TLS_CA") {
            None if cert.is_some() || key.is_some() => {
                anyhow::bail!(
                    "--tls-cert and --tls-key need --tls-ca, the CA that checks the other processes' certificates"
                )
            }
            None => None,
            Some(ca) => {
                anyhow::ensure!(
                    !serves || (cert.is_some() && key.is_some()),
                    "with --tls-ca this process serves connections in TLS, so it needs --tls-cert and --tls-key too"
                );
                Some(Tls::from_files(&TlsFiles { cert, key, ca }).map_err(anyhow::Error::msg)?)
            }
        };
        sleet_wire::tls::set_process_tls(tls);
        Ok(secret)
    }
}

/// Whether every address `address` names is on this machine's loopback.
pub fn is_loopback(address: &str) -> Result<bool> {
    let resolved: Vec<_> =
        address.to_socket_addrs().with_context(|| format!("{address} is not a HOST:PORT address"))?.collect();
    Ok(!resolved.is_empty() && resolved.iter().all(|socket| socket.ip().is_loopback()))
}

/// Refuses to serve `address` (what `flag` set) beyond loopback without a secret: anyone who
/// could reach it could register a worker or run a job.
pub fn check_exposure(flag: &str, address: &str, secret: Option<&Secret>) -> Result<()> {
    if secret.is_none() && !is_loopback(address)? {
        anyhow::bail!(
            "{flag} {address}: without a cluster secret sleet serves loopback addresses only, since anyone who reaches \
             the address could run a job; give --secret-file FILE (or {}) to every process to serve beyond this machine",
            auth::SECRET_ENV
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_secret_only_loopback_is_served() {
        assert!(is_loopback("127.0.0.1:7077").expect("an address"));
        assert!(is_loopback("127.0.0.2:0").expect("an address"));
        assert!(!is_loopback("0.0.0.0:7077").expect("an address"));
        assert!(check_exposure("--listen", "127.0.0.1:7077", None).is_ok());
        let error = check_exposure("--listen", "0.0.0.0:7077", None).expect_err("refused");
        assert!(format!("{error}").contains("--listen 0.0.0.0:7077") && format!("{error}").contains("--secret-file"));
        let secret = Secret::new("0123456789abcdef").expect("long enough");
        assert!(check_exposure("--listen", "0.0.0.0:7077", Some(&secret)).is_ok());
        assert!(is_loopback("not an address").is_err());
    }
}
