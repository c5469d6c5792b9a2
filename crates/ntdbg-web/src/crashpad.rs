//! The Crashpad/Breakpad upload protocol, server side: a `multipart/form-data` POST (gzip
//! encoded when the client says `Content-Encoding: gzip`, as Crashpad does by default) with the
//! dump in the `upload_file_minidump` part and annotations in the other fields (`prod` or
//! `product`, `ver` or `version`, `guid`, and anything the application set); Crashpad may also
//! name the product, version and client in the URL's query. Every malformed upload gets a
//! [`BadUpload`] that says what is wrong.

use bytes::Bytes;
use std::collections::BTreeMap;
use std::io::Read;

/// The form field holding the dump.
pub const DUMP_FIELD: &str = "upload_file_minidump";
/// Most annotations one report may carry.
const MAX_ANNOTATIONS: usize = 1_000;
/// The longest annotation value kept, in bytes (Crashpad's own limit is far lower).
const MAX_ANNOTATION: usize = 64 * 1024;
/// A minidump header's size: anything shorter is not one.
const MINIDUMP_HEADER: usize = 32;

/// A report as its client sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The minidump's bytes.
    pub dump: Bytes,
    /// Every other field (and the URL's `product`, `version`, `guid` when the form has none).
    pub annotations: BTreeMap<String, String>,
}

impl Report {
    /// The first annotation of `names` that is present and not empty.
    fn first(&self, names: &[&str]) -> Option<String> {
        names
            .iter()
            .filter_map(|n| self.annotations.get(*n))
            .find(|v| !v.trim().is_empty())
            .map(|v| v.trim().to_string())
    }

    /// The product (`prod`, else `product`).
    pub fn product(&self) -> Option<String> {
        self.first(&["prod", "product"])
    }

    /// The product's version (`ver`, else `version`).
    pub fn version(&self) -> Option<String> {
        self.first(&["ver", "version"])
    }

    /// The client's id (`guid`).
    pub fn guid(&self) -> Option<String> {
        self.first(&["guid"])
    }
}

/// What is wrong with an upload.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadUpload {
    /// The body (or its decompressed form) is larger than allowed.
    #[error("the upload is larger than the limit of {0} bytes")]
    TooLarge(usize),
    /// `Content-Encoding` is neither gzip nor identity.
    #[error("Content-Encoding {0:?} is not supported (send gzip or nothing)")]
    Encoding(String),
    /// The body says gzip but is not.
    #[error("the body is not valid gzip: {0}")]
    Gzip(String),
    /// Not `multipart/form-data` with a boundary.
    #[error("Content-Type must be multipart/form-data with a boundary (the Crashpad/Breakpad upload format)")]
    NotMultipart,
    /// The multipart body does not parse.
    #[error("the multipart body is malformed: {0}")]
    Multipart(String),
    /// No dump part.
    #[error("no `upload_file_minidump` part: the dump must be sent in that form field")]
    NoDump,
    /// The dump part is not a minidump.
    #[error("`upload_file_minidump` is not a minidump (it does not start with the MDMP header)")]
    NotMinidump,
    /// More annotations than allowed.
    #[error("more than {MAX_ANNOTATIONS} annotations")]
    TooManyAnnotations,
}

/// The body as sent, decompressed when `encoding` says gzip; at most `limit` bytes either way.
pub fn decode_body(body: Bytes, encoding: Option<&str>, limit: usize) -> Result<Bytes, BadUpload> {
    match encoding.map(|e| e.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("identity") => Ok(body),
        Some("gzip") | Some("x-gzip") => {
            let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(limit));
            flate2::read::MultiGzDecoder::new(&body[..])
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| BadUpload::Gzip(e.to_string()))?;
            if out.len() > limit {
                return Err(BadUpload::TooLarge(limit));
            }
            Ok(out.into())
        }
        Some(other) => Err(BadUpload::Encoding(other.to_string())),
    }
}

/// Parses a decoded body of type `content_type`; `query` is the URL's query string.
pub async fn parse_report(
    body: Bytes,
    content_type: Option<&str>,
    query: Option<&str>,
) -> Result<Report, BadUpload> {
    let boundary = content_type
        .and_then(|t| multer::parse_boundary(t).ok())
        .ok_or(BadUpload::NotMultipart)?;
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(body) });
    let mut form = multer::Multipart::new(stream, boundary);
    let bad = |e: multer::Error| BadUpload::Multipart(e.to_string());
    let mut dump = None;
    let mut annotations = BTreeMap::new();
    while let Some(field) = form.next_field().await.map_err(bad)? {
        let name = field.name().unwrap_or_default().to_string();
        let is_file = field.file_name().is_some();
        let bytes = field.bytes().await.map_err(bad)?;
        if name == DUMP_FIELD {
            dump = Some(bytes);
        } else if !is_file {
            if annotations.len() >= MAX_ANNOTATIONS {
                return Err(BadUpload::TooManyAnnotations);
            }
            let value = &bytes[..bytes.len().min(MAX_ANNOTATION)];
            annotations.insert(name, String::from_utf8_lossy(value).into_owned());
        }
    }
    for (key, value) in query.map(crate::access::form_pairs).unwrap_or_default() {
        if key != "token" && ["product", "version", "guid", "prod", "ver"].contains(&key.as_str()) {
            annotations.entry(key).or_insert(value);
        }
    }
    let dump = dump.ok_or(BadUpload::NoDump)?;
    if dump.len() < MINIDUMP_HEADER || !dump.starts_with(b"MDMP") {
        return Err(BadUpload::NotMinidump);
    }
    Ok(Report { dump, annotations })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const BOUNDARY: &str = "---MultipartBoundary-abcdefghijklmnopqrstuvwxyz012345---";

    /// A body laid out as Crashpad's `HTTPMultipartBuilder` writes it.
    fn crashpad_body(fields: &[(&str, &str)], dump: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        for (k, v) in fields {
            write!(
                body,
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n"
            )
            .unwrap();
        }
        write!(
            body,
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{DUMP_FIELD}\"; filename=\"a.dmp\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(dump);
        write!(body, "\r\n--{BOUNDARY}--\r\n").unwrap();
        body
    }

    fn content_type() -> String {
        format!("multipart/form-data; boundary={BOUNDARY}")
    }

    fn gzip(bytes: &[u8]) -> Bytes {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap().into()
    }

    fn parse(body: Vec<u8>, query: Option<&str>) -> Result<Report, BadUpload> {
        futures_util::FutureExt::now_or_never(parse_report(
            body.into(),
            Some(&content_type()),
            query,
        ))
        .expect("no waiting on a buffered body")
    }

    fn dump() -> Vec<u8> {
        let mut d = b"MDMP\x93\xa7\x00\x00".to_vec();
        d.resize(64, 0);
        d
    }

    #[test]
    fn a_gzipped_crashpad_upload_parses() {
        let body = crashpad_body(
            &[("prod", "crashy"), ("ver", "1.2"), ("ptype", "x")],
            &dump(),
        );
        let decoded = decode_body(gzip(&body), Some("gzip"), 1 << 20).unwrap();
        let report = parse(decoded.to_vec(), Some("guid=g1&token=secret")).unwrap();
        assert_eq!(report.dump.len(), 64);
        assert_eq!(report.product().as_deref(), Some("crashy"));
        assert_eq!(report.version().as_deref(), Some("1.2"));
        assert_eq!(report.guid().as_deref(), Some("g1"));
        assert_eq!(
            report.annotations.get("ptype").map(String::as_str),
            Some("x")
        );
        assert!(!report.annotations.contains_key("token"));
    }

    #[test]
    fn the_url_names_product_when_the_form_does_not() {
        let body = crashpad_body(&[], &dump());
        let report = parse(body, Some("product=app&version=2.0")).unwrap();
        assert_eq!(report.product().as_deref(), Some("app"));
        assert_eq!(report.version().as_deref(), Some("2.0"));
    }

    #[test]
    fn malformed_uploads_are_named() {
        assert_eq!(
            parse(
                crashpad_body(&[("prod", "a")], b"not a dump at all, not at all....."),
                None
            ),
            Err(BadUpload::NotMinidump)
        );
        let no_dump = format!("--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"prod\"\r\n\r\na\r\n--{BOUNDARY}--\r\n");
        assert_eq!(parse(no_dump.into_bytes(), None), Err(BadUpload::NoDump));
        let cut = crashpad_body(&[], &dump())[..80].to_vec();
        assert!(matches!(parse(cut, None), Err(BadUpload::Multipart(_))));
        assert!(matches!(
            decode_body(Bytes::from_static(b"plain"), Some("gzip"), 100),
            Err(BadUpload::Gzip(_))
        ));
        assert_eq!(
            decode_body(gzip(&[0; 1000]), Some("gzip"), 999),
            Err(BadUpload::TooLarge(999))
        );
        assert!(matches!(
            decode_body(Bytes::new(), Some("br"), 1),
            Err(BadUpload::Encoding(_))
        ));
        let not_multipart = futures_util::FutureExt::now_or_never(parse_report(
            Bytes::new(),
            Some("application/json"),
            None,
        ))
        .unwrap();
        assert_eq!(not_multipart, Err(BadUpload::NotMultipart));
    }
}
