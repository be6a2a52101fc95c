//! The simulated clusters' certificate authority and the API listener's serving certificate,
//! made fresh at every start (what a cluster's status reports as its CA).

use std::net::IpAddr;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

pub struct ApiTls {
    /// The CA certificate, PEM: what clients trust.
    pub ca_pem: String,
    pub config: Arc<rustls::ServerConfig>,
}

pub fn generate(ip: IpAddr) -> Result<ApiTls, String> {
    let fail = |e: rcgen::Error| format!("cannot make the simulated clusters' certificates: {e}");
    let ca_key = KeyPair::generate().map_err(fail)?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "fleetbot simulator cluster CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_pem = ca.self_signed(&ca_key).map_err(fail)?.pem();
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf = CertificateParams::new(vec!["localhost".to_string()]).map_err(fail)?;
    leaf.subject_alt_names.push(SanType::IpAddress(ip));
    leaf.distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate().map_err(fail)?;
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).map_err(fail)?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(vec![leaf_cert.der().clone()], key)
    .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ApiTls {
        ca_pem,
        config: Arc::new(config),
    })
}
