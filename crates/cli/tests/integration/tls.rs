//! TLS between the processes (`--tls-cert`, `--tls-key`, `--tls-ca`): a cluster whose every
//! connection is TLS runs a job to its exact end, and a process without the cluster's TLS, or
//! with a certificate another CA signed, is refused with an error that says so.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{run_with_limit, sleet, test_dir, ysb_job_file, Reaper};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};

/// A CA and a certificate it signed for 127.0.0.1, as PEM files in `dir`: (ca, cert, key).
fn cluster_certificates(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().expect("a CA key")).expect("the CA");
    let key = KeyPair::generate().expect("a key");
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .expect("certificate parameters")
        .signed_by(&key, &ca)
        .expect("a certificate the CA signed");
    let paths =
        (dir.join(format!("{name}-ca.pem")), dir.join(format!("{name}-cert.pem")), dir.join(format!("{name}-key.pem")));
    std::fs::write(&paths.0, ca.pem()).expect("CA written");
    std::fs::write(&paths.1, leaf.pem()).expect("certificate written");
    std::fs::write(&paths.2, key.serialize_pem()).expect("key written");
    paths
}

fn tls_flags(ca: &Path, cert: Option<(&Path, &Path)>) -> Vec<String> {
    let mut flags = vec!["--tls-ca".to_string(), ca.display().to_string()];
    if let Some((cert, key)) = cert {
        flags.extend([
            "--tls-cert".to_string(),
            cert.display().to_string(),
            "--tls-key".into(),
            key.display().to_string(),
        ]);
    }
    flags
}

#[test]
fn a_cluster_in_tls_runs_its_job_and_refuses_processes_outside_its_tls() {
    let dir = test_dir("tls_cluster");
    let (ca, cert, key) = cluster_certificates(&dir, "cluster");
    let (other_ca, other_cert, other_key) = cluster_certificates(&dir, "other");
    let job = ysb_job_file(&dir, "2s");
    let serving = tls_flags(&ca, Some((&cert, &key)));
    let serving: Vec<&str> = serving.iter().map(String::as_str).collect();

    let (driver, address) = common::start_driver_on("127.0.0.1:0", &serving);
    let mut processes = Reaper(vec![driver]);
    processes.0.push(common::start_worker(&address, &serving));
    processes.0.push(common::start_worker(&address, &serving));

    // A worker without TLS, and one whose certificate another CA signed, do not get in.
    for (flags, expected) in [
        (Vec::new(), "the peer speaks TLS and this process does not"),
        (tls_flags(&other_ca, Some((&other_cert, &other_key))), "TLS"),
    ] {
        let mut stranger = sleet();
        stranger.args(["worker", "--driver", &address, "--driver-reconnect", "0"]).args(&flags);
        let output = run_with_limit(stranger, Duration::from_secs(20));
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{flags:?}: {said}");
        assert!(said.contains(expected), "{flags:?} should fail on {expected}: {said}");
    }

    // A client without the cluster's CA cannot talk to the driver; with it, the job runs.
    let mut plain = sleet();
    plain.arg("submit").arg(&job).args(["--driver", &address]);
    let output = run_with_limit(plain, Duration::from_secs(20));
    assert!(!output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut member = sleet();
    member.arg("submit").arg(&job).args(["--driver", &address]).args(tls_flags(&ca, None));
    let output = run_with_limit(member, Duration::from_secs(60));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // 2 s of 100 ms batches at 20 000 events/s, through two workers that shuffle in TLS.
    assert!(stdout.contains("finished: 20 batches, 40000 events in"), "{stdout}");
    let results = std::fs::read_dir(dir.join("results")).expect("results").count();
    assert!(results > 0, "the reduce side wrote its windows");

    let mut half = sleet();
    half.args(["worker", "--driver", &address, "--tls-ca"]).arg(&ca);
    let output = run_with_limit(half, Duration::from_secs(20));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("--tls-cert and --tls-key"), "a worker serves, so it needs a certificate: {said}");
    let _ = std::fs::remove_dir_all(&dir);
}
