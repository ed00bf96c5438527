//! TLS for the PostgreSQL store with rustls, following libpq's `sslmode`:
//!
//! | sslmode | encryption | certificate checked |
//! |---|---|---|
//! | `disable` | never | - |
//! | `allow`, `prefer` (default) | when the server offers it | no |
//! | `require` | always | no; chain only when a root certificate file exists (as libpq) |
//! | `verify-ca` | always | chain against `sslrootcert` |
//! | `verify-full` | always | chain and host name |
//!
//! `sslrootcert` (or `PGSSLROOTCERT`, else `~/.postgresql/root.crt`) is a PEM file, or the word
//! `system` for the operating system's trust store.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::conninfo::{LocationError, SslMode};

/// The rustls client configuration for `mode`.
pub fn client_config(
    mode: SslMode,
    root_cert: Option<&Path>,
) -> Result<rustls::ClientConfig, LocationError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|err| LocationError::tls("TLS", err))?;
    let verify = match mode {
        SslMode::Disable | SslMode::Allow | SslMode::Prefer => None,
        SslMode::Require => root_cert
            .filter(|path| path.is_file())
            .map(|path| (path, false)),
        SslMode::VerifyCa | SslMode::VerifyFull => {
            let path = root_cert.ok_or(
                "sslmode verify-ca/verify-full needs a root certificate: set sslrootcert=FILE \
                 (or sslrootcert=system for the system's CAs), or put it in ~/.postgresql/root.crt",
            )?;
            Some((path, mode == SslMode::VerifyFull))
        }
    };
    let config = match verify {
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(BelowFull {
                chain: None,
                provider,
            }))
            .with_no_client_auth(),
        Some((path, check_name)) => {
            let roots = Arc::new(root_store(path)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|err| LocationError::tls("TLS", err))?;
            if check_name {
                builder.with_webpki_verifier(webpki).with_no_client_auth()
            } else {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(BelowFull {
                        chain: Some(webpki),
                        provider,
                    }))
                    .with_no_client_auth()
            }
        }
    };
    Ok(config)
}

fn root_store(path: &Path) -> Result<RootCertStore, LocationError> {
    let mut roots = RootCertStore::empty();
    if path.as_os_str() == "system" {
        let found = rustls_native_certs::load_native_certs();
        let (added, _) = roots.add_parsable_certificates(found.certs);
        if added == 0 {
            return Err("sslrootcert=system: no certificates in the system trust store".into());
        }
        return Ok(roots);
    }
    use rustls::pki_types::pem::PemObject;
    let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .map_err(|err| LocationError::tls(format!("sslrootcert {}", path.display()), err))?
        .collect::<Result<_, _>>()
        .map_err(|err| LocationError::tls(format!("sslrootcert {}", path.display()), err))?;
    let (added, _) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(LocationError::Invalid(format!(
            "sslrootcert {}: no certificate in the file",
            path.display()
        )));
    }
    Ok(roots)
}

/// What libpq checks below `verify-full`: with `chain`, that the certificate chain leads to
/// the root certificate, the host name not checked (`verify-ca`, `require` with a root file);
/// without, nothing of the certificate (`prefer`/`require` without a root certificate). The
/// handshake signature is checked either way.
#[derive(Debug)]
struct BelowFull {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for BelowFull {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
