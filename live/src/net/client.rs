//! A blocking HTTP client of the coordinator's API (ureq): `http://`, or `https://` to a
//! coordinator started with `--tls` (or behind a TLS proxy), trusting Mozilla's roots or the
//! certificates of a `--ca-file` (a private CA, or the coordinator's own self-signed one).

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig, TlsProvider};

#[derive(Clone)]
pub struct Client {
    base: String,
    token: String,
    agent: ureq::Agent,
}

/// Why a call failed: the coordinator could not be reached, or it answered with an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    Unreachable(String),
    Status(u16, String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Unreachable(e) => write!(f, "coordinator unreachable: {e}"),
            CallError::Status(401, _) => write!(f, "401 unauthorised: wrong or missing token"),
            CallError::Status(s, reason) => write!(f, "{s}: {reason}"),
        }
    }
}

impl std::error::Error for CallError {}

/// Reads a token file (first line, trimmed).
pub fn read_token(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|t| t.trim().to_string())
        .map_err(|e| format!("{}: cannot read the token: {e}", path.display()))
}

/// How a client does `https`: whom it trusts, and what it shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// Trust only the certificates in this PEM file (the coordinator's self-signed one, or a
    /// private CA's); None: Mozilla's roots.
    pub ca_file: Option<PathBuf>,
    /// A client certificate chain and its private key (PEM), for a coordinator that asks for
    /// one (`live serve --tls-client-ca`).
    pub identity: Option<(PathBuf, PathBuf)>,
}

/// The certificates of a PEM file, as ureq takes them (read as the server reads its own).
fn pem_certificates(path: &Path) -> Result<Vec<Certificate<'static>>, String> {
    let certs = crate::net::tls::certificates(path)?;
    Ok(certs.iter().map(|c| Certificate::from_der(c.as_ref()).to_owned()).collect())
}

impl Client {
    /// `base` is `http://HOST:PORT` or `https://HOST:PORT` (a bare `HOST:PORT` gets
    /// `http://`); `https` trusts Mozilla's root certificates.
    pub fn new(base: &str, token: &str, timeout: Duration) -> Client {
        Self::build(base, token, timeout, TlsConfig::builder().provider(TlsProvider::Rustls).build())
    }

    /// As [`Client::new`], with `tls` for `https`.
    pub fn with_tls(base: &str, token: &str, timeout: Duration, tls: &ClientTls) -> Result<Client, String> {
        let mut config = TlsConfig::builder().provider(TlsProvider::Rustls);
        if let Some(ca) = &tls.ca_file {
            config = config.root_certs(RootCerts::new_with_certs(&pem_certificates(ca)?));
        }
        if let Some((cert, key)) = &tls.identity {
            let chain = pem_certificates(cert)?;
            let pem = std::fs::read(key).map_err(|e| format!("{}: cannot read the client key: {e}", key.display()))?;
            let key =
                PrivateKey::from_pem(&pem).map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
            config = config.client_cert(Some(ClientCert::new_with_certs(&chain, key)));
        }
        Ok(Self::build(base, token, timeout, config.build()))
    }

    fn build(base: &str, token: &str, timeout: Duration, tls: TlsConfig) -> Client {
        let base = if base.contains("://") { base.to_string() } else { format!("http://{base}") };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .tls_config(tls)
            .build()
            .into();
        Client { base: base.trim_end_matches('/').to_string(), token: token.to_string(), agent }
    }

    pub fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, CallError> {
        let response = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .call();
        Self::read(response)
    }

    /// A GET whose answer is text, not JSON (`/metrics`): the body and its content type.
    /// Every job of `GET /v1/jobs`, page after page.
    pub fn all_jobs(&self) -> Result<Vec<serde_json::Value>, CallError> {
        Ok(self.all_pages("/v1/jobs", "jobs")?["jobs"].as_array_mut().map(std::mem::take).unwrap_or_default())
    }

    /// A paged listing (`/v1/jobs`, `/v1/decisions`) whole: the last page's answer, its
    /// `list` holding the entries of every page (each page as the coordinator lists it, so a
    /// long session never costs it one huge answer).
    pub fn all_pages(&self, path: &str, list: &str) -> Result<serde_json::Value, CallError> {
        let mut entries = Vec::new();
        let mut next = path.to_string();
        loop {
            let mut page: serde_json::Value = self.get(&next)?;
            entries.extend(page[list].as_array_mut().map(std::mem::take).unwrap_or_default());
            match page["next"].as_u64() {
                Some(after) => next = format!("{path}?after={after}"),
                None => {
                    page[list] = serde_json::Value::Array(entries);
                    return Ok(page);
                }
            }
        }
    }

    pub fn get_text(&self, path: &str) -> Result<(String, String), CallError> {
        let response = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .call();
        let mut response = response.map_err(|e| CallError::Unreachable(e.to_string()))?;
        let status = response.status().as_u16();
        let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
        let text = response.body_mut().read_to_string().map_err(|e| CallError::Unreachable(e.to_string()))?;
        if !(200..300).contains(&status) {
            return Err(CallError::Status(status, text));
        }
        Ok((text, kind))
    }

    pub fn post<B: Serialize, T: DeserializeOwned>(&self, path: &str, body: &B) -> Result<T, CallError> {
        let response = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {}", self.token))
            .send_json(body);
        Self::read(response)
    }

    fn read<T: DeserializeOwned>(
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<T, CallError> {
        let mut response = response.map_err(|e| CallError::Unreachable(e.to_string()))?;
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().map_err(|e| CallError::Unreachable(e.to_string()))?;
        if !(200..300).contains(&status) {
            let reason = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_string))
                .unwrap_or(text);
            return Err(CallError::Status(status, reason));
        }
        serde_json::from_str(&text).map_err(|e| CallError::Status(status, format!("unreadable answer: {e}")))
    }
}
