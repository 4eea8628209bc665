//! TLS between sleet processes, when the cluster asks for it (`--tls-cert`, `--tls-key`,
//! `--tls-ca`): every connection a process accepts or makes is then encrypted, and every
//! process checks that the one it connects to holds a certificate the cluster's CA signed for
//! the address it dialled. The cluster secret (`auth`) still says who may join; TLS keeps what
//! they say, rows included, from whoever watches the network.
//!
//! Like the secret, it is one setting for the whole process (`set_process_tls`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The files a process's TLS is made of (PEM).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// This process's certificate chain; required to accept connections.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// The CA that signed every process's certificate; required to connect.
    pub ca: PathBuf,
}

/// A process's TLS: the acceptor for the connections it serves (when it has a certificate)
/// and the connector for those it makes.
#[derive(Clone)]
pub struct Tls {
    acceptor: Option<TlsAcceptor>,
    connector: TlsConnector,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls {{ serves: {} }}", self.acceptor.is_some())
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|error| format!("reading {}: {error}", path.display()))
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = read(path)?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("{}: not a PEM certificate file ({error})", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{}: holds no certificate (PEM `BEGIN CERTIFICATE`)", path.display()));
    }
    Ok(certificates)
}

impl Tls {
    pub fn from_files(files: &TlsFiles) -> Result<Tls, String> {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in certificates(&files.ca)? {
            roots
                .add(certificate)
                .map_err(|error| format!("{}: not a usable CA certificate ({error})", files.ca.display()))?;
        }
        let client = rustls::ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let acceptor = match (&files.cert, &files.key) {
            (Some(cert), Some(key)) => {
                let chain = certificates(cert)?;
                let key_bytes = read(key)?;
                let key = PrivateKeyDer::from_pem_slice(&key_bytes)
                    .map_err(|error| format!("{}: not a PEM private key ({error})", key.display()))?;
                let server = rustls::ServerConfig::builder_with_provider(provider())
                    .with_safe_default_protocol_versions()
                    .map_err(|error| error.to_string())?
                    .with_no_client_auth()
                    .with_single_cert(chain, key)
                    .map_err(|error| format!("{} and its key do not make a certificate: {error}", cert.display()))?;
                Some(TlsAcceptor::from(Arc::new(server)))
            }
            (None, None) => None,
            _ => return Err("--tls-cert and --tls-key go together".into()),
        };
        Ok(Tls { acceptor, connector: TlsConnector::from(Arc::new(client)) })
    }

    pub fn acceptor(&self) -> Option<&TlsAcceptor> {
        self.acceptor.as_ref()
    }

    pub fn connector(&self) -> &TlsConnector {
        &self.connector
    }
}

/// The name a certificate must carry for `address` (`host:port`): its host, an IP address or
/// a DNS name.
pub fn server_name(address: &str) -> Result<ServerName<'static>, String> {
    let host = match address.rsplit_once(':') {
        Some((host, _port)) => host.trim_start_matches('[').trim_end_matches(']'),
        None => address,
    };
    ServerName::try_from(host.to_string())
        .map_err(|error| format!("{address}: no host to check a certificate against ({error})"))
}

static PROCESS_TLS: OnceLock<Option<Tls>> = OnceLock::new();

/// Sets this process's TLS, once, before its first connection; false when already set.
pub fn set_process_tls(tls: Option<Tls>) -> bool {
    PROCESS_TLS.set(tls).is_ok()
}

pub fn process_tls() -> Option<&'static Tls> {
    PROCESS_TLS.get().and_then(Option::as_ref)
}
