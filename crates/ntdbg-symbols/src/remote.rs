//! Symbol servers in object storage: `srv*CACHE*s3://BUCKET/PREFIX/symbols`, the symbols
//! `ntdbg symbols upload` files in a crash store's bucket.
//!
//! This crate names the URLs and drives them like HTTP servers (download cache, negative cache,
//! time budget, notes in `tried`); the bytes come through a [`RemoteReader`] the program
//! registers ([`register_remote_reader`], the object-store client of `ntdbg-objects`), so the
//! symbol crate needs no object-store client of its own. An object store is the user's own
//! storage, not a public symbol server: it is read even when downloads are off (`--offline`).

use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The URL schemes of object stores.
const SCHEMES: &[&str] = &["s3://"];

/// Why a [`RemoteReader`] could not fetch an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteError {
    /// The store could not be reached (not asked again in this session).
    Unreachable(String),
    /// Another failure (access refused, a broken transfer, the file could not be written).
    Failed(String),
}

/// Reads objects named by URL from an object store.
pub trait RemoteReader: Send + Sync {
    /// Copies the object at `url` into the new file `dest` (at most `limit` bytes, within
    /// `timeout`): its size, or `Ok(None)` when the store has no such object.
    fn fetch(
        &self,
        url: &str,
        dest: &Path,
        limit: u64,
        timeout: Duration,
    ) -> Result<Option<u64>, RemoteError>;
}

/// The reader of object-store URLs, once the program has registered one.
static READER: RwLock<Option<Arc<dyn RemoteReader>>> = RwLock::new(None);

/// Makes `reader` the reader of every object-store URL (`s3://…`) of every symbol path.
pub fn register_remote_reader(reader: Arc<dyn RemoteReader>) {
    *READER.write().unwrap_or_else(|e| e.into_inner()) = Some(reader);
}

/// The registered reader.
pub(crate) fn reader() -> Option<Arc<dyn RemoteReader>> {
    READER.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Whether `url` names an object store (`s3://BUCKET/…`).
pub(crate) fn is_object_store(url: &str) -> bool {
    SCHEMES.iter().any(|s| {
        url.get(..s.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(s))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_store_urls() {
        assert!(is_object_store("s3://bucket/symbols"));
        assert!(is_object_store("S3://bucket"));
        assert!(!is_object_store(
            "https://msdl.microsoft.com/download/symbols"
        ));
        assert!(!is_object_store("/srv/symbols"));
    }
}
