//! The reader `ntdbg-symbols` uses for `srv*s3://BUCKET/PREFIX/symbols` entries: each URL is a
//! bucket and a key, read through one [`Objects`] per bucket.

use crate::{Objects, StoreUrl};
use ntdbg_symbols::{RemoteError, RemoteReader};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Reads `s3://BUCKET/KEY` URLs.
#[derive(Default)]
struct SymbolReader {
    buckets: Mutex<HashMap<String, Objects>>,
}

impl SymbolReader {
    fn bucket(&self, bucket: &str) -> Result<Objects, RemoteError> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(objects) = buckets.get(bucket) {
            return Ok(objects.clone());
        }
        let url = StoreUrl::S3 {
            bucket: bucket.to_string(),
            prefix: String::new(),
        };
        let objects = Objects::open(&url).map_err(|e| RemoteError::Failed(e.message))?;
        buckets.insert(bucket.to_string(), objects.clone());
        Ok(objects)
    }
}

impl RemoteReader for SymbolReader {
    fn fetch(
        &self,
        url: &str,
        dest: &Path,
        limit: u64,
        timeout: Duration,
    ) -> Result<Option<u64>, RemoteError> {
        let Some(StoreUrl::S3 {
            bucket,
            prefix: key,
        }) = StoreUrl::parse(Some(url)).ok()
        else {
            return Err(RemoteError::Failed(format!("{url}: not an s3:// URL")));
        };
        let objects = self.bucket(&bucket)?;
        let (dest_owned, key_owned) = (dest.to_path_buf(), key.clone());
        let work = async move {
            tokio::time::timeout(timeout, objects.download(&key_owned, &dest_owned, limit)).await
        };
        match crate::block_on(work) {
            Ok(Ok(size)) => Ok(size),
            Ok(Err(e)) => Err(RemoteError::Failed(e.message)),
            Err(_) => {
                let _ = std::fs::remove_file(dest);
                Err(RemoteError::Unreachable(format!(
                    "timed out (limit {} ms)",
                    timeout.as_millis()
                )))
            }
        }
    }
}

/// Makes `ntdbg-symbols` read `s3://` symbol path entries through this crate.
pub fn register_symbol_reader() {
    ntdbg_symbols::register_remote_reader(Arc::new(SymbolReader::default()));
}
