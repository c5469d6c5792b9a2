//! Object storage for the crash store (issue 38): the dumps `ntdbg collect` accepts and the
//! symbols `ntdbg symbols upload` files, in a local folder (the default) or a bucket of any
//! S3-compatible service (MinIO, Garage, Ceph, AWS S3), so that workers on many machines need
//! no shared folder.
//!
//! # Design
//!
//! - **`object_store`** does the talking: `LocalFileSystem` for folders, `AmazonS3` (signed
//!   with `ring`) behind a `PrefixStore` for `s3://BUCKET/PREFIX`; S3 settings and credentials
//!   come from the usual `AWS_*` variables, never from a URL or a command line.
//! - **Durable writes.** [`Objects::put`] returns only once the object would survive a power
//!   cut: an S3 `PUT` is answered when the service has stored it; a local folder is written by
//!   this crate ([`local`]: a temporary file, `fsync`, rename, `fsync` of the folder), because
//!   `LocalFileSystem` renames without syncing.
//! - **One runtime of its own.** Every operation runs on a small tokio runtime owned by this
//!   crate, so synchronous callers (workers, the command line: the `*_blocking` methods) and
//!   asynchronous ones (the collector) share one connection pool and none blocks a runtime it
//!   does not own.
//! - **Symbols for the symbol path.** [`register_symbol_reader`] lets `ntdbg-symbols` read
//!   `srv*s3://BUCKET/PREFIX/symbols` entries through the same client.

pub mod keys;
mod local;
mod location;
mod symbol_reader;
mod symbol_upload;

pub use location::{ObjectUrl, StoreUrl};
pub use symbol_reader::register_symbol_reader;
pub use symbol_upload::{upload_symbol_file, FiledSymbol};

use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Why an object operation failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ObjectError {
    /// What went wrong, naming the store and the object.
    pub message: String,
}

impl ObjectError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> ObjectError {
        ObjectError {
            message: message.into(),
        }
    }
}

/// A store of objects: a local folder or an S3 bucket (and prefix).
#[derive(Clone)]
pub struct Objects {
    url: StoreUrl,
    store: Arc<dyn ObjectStore>,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects").field("url", &self.url).finish()
    }
}

/// The runtime every object operation runs on.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ntdbg-objects")
            .enable_all()
            .build()
            .expect("the object-store runtime starts")
    })
}

/// Runs `work` on the object-store runtime and waits for it, from any thread outside it.
fn block_on<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv()
        .expect("object-store tasks run to completion unless the process is exiting")
}

/// Runs `work` on the object-store runtime, awaited from any runtime.
async fn on_runtime<T: Send + 'static>(
    work: impl Future<Output = Result<T, ObjectError>> + Send + 'static,
) -> Result<T, ObjectError> {
    runtime()
        .spawn(work)
        .await
        .map_err(|e| ObjectError::new(format!("object-store task failed: {e}")))?
}

impl Objects {
    /// Opens the store at `url` (a local folder is created when missing). Nothing is
    /// contacted yet.
    pub fn open(url: &StoreUrl) -> Result<Objects, ObjectError> {
        let url = url.clone().absolute();
        let store: Arc<dyn ObjectStore> = match &url {
            StoreUrl::Local(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| {
                    ObjectError::new(format!("cannot create store folder {}: {e}", dir.display()))
                })?;
                Arc::new(LocalFileSystem::new_with_prefix(dir).map_err(|e| {
                    ObjectError::new(format!("store folder {}: {e}", dir.display()))
                })?)
            }
            StoreUrl::S3 { bucket, prefix } => {
                // reqwest's TLS is built without a crypto provider: ring is this process's
                // (an earlier call, or the program, may have installed it already).
                let _ = rustls::crypto::ring::default_provider().install_default();
                let s3 = AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()
                    .map_err(|e| ObjectError::new(format!("store {url}: {e}")))?;
                if prefix.is_empty() {
                    Arc::new(s3)
                } else {
                    Arc::new(PrefixStore::new(s3, prefix.as_str()))
                }
            }
        };
        Ok(Objects { url, store })
    }

    /// Where it is.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    fn error(&self, key: &str, e: impl std::fmt::Display) -> ObjectError {
        ObjectError::new(format!("{}: {e}", self.url.object_url(key)))
    }

    /// Stores `bytes` at `key` durably (replacing an object there). Returns once the object
    /// would survive the machine losing power.
    pub async fn put(&self, key: &str, bytes: Bytes) -> Result<(), ObjectError> {
        let (this, key) = (self.clone(), key.to_string());
        on_runtime(async move {
            match this.url.local_dir() {
                Some(dir) => {
                    let (dir, k) = (dir.to_path_buf(), key.clone());
                    tokio::task::spawn_blocking(move || local::put_durable(&dir, &k, &bytes))
                        .await
                        .map_err(|e| this.error(&key, e))?
                        .map_err(|e| this.error(&key, e))
                }
                None => this
                    .store
                    .put(&ObjectPath::from(key.as_str()), bytes.into())
                    .await
                    .map(|_| ())
                    .map_err(|e| this.error(&key, e)),
            }
        })
        .await
    }

    /// Whether an object is at `key`.
    pub async fn exists(&self, key: &str) -> Result<bool, ObjectError> {
        let (this, key) = (self.clone(), key.to_string());
        on_runtime(async move {
            match this.store.head(&ObjectPath::from(key.as_str())).await {
                Ok(_) => Ok(true),
                Err(object_store::Error::NotFound { .. }) => Ok(false),
                Err(e) => Err(this.error(&key, e)),
            }
        })
        .await
    }

    /// Copies the object at `key` into the new file `dest`, refusing one over `limit` bytes:
    /// its size, or `None` when there is no such object. A failed copy leaves no file.
    pub async fn download(
        &self,
        key: &str,
        dest: &Path,
        limit: u64,
    ) -> Result<Option<u64>, ObjectError> {
        let (this, key, dest) = (self.clone(), key.to_string(), dest.to_path_buf());
        on_runtime(async move {
            let result = this.copy_to(&key, &dest, limit).await;
            if !matches!(result, Ok(Some(_))) {
                let _ = std::fs::remove_file(&dest);
            }
            result
        })
        .await
    }

    async fn copy_to(
        &self,
        key: &str,
        dest: &PathBuf,
        limit: u64,
    ) -> Result<Option<u64>, ObjectError> {
        let got = match self.store.get(&ObjectPath::from(key)).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.error(key, e)),
        };
        if got.meta.size > limit {
            return Err(self.error(
                key,
                format!("{} bytes, over the limit of {limit}", got.meta.size),
            ));
        }
        let mut file = std::fs::File::create(dest)
            .map_err(|e| ObjectError::new(format!("cannot create {}: {e}", dest.display())))?;
        let mut stream = got.into_stream();
        let mut written = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| self.error(key, e))?;
            written += chunk.len() as u64;
            if written > limit {
                return Err(self.error(key, format!("over the limit of {limit} bytes")));
            }
            file.write_all(&chunk)
                .map_err(|e| ObjectError::new(format!("cannot write {}: {e}", dest.display())))?;
        }
        Ok(Some(written))
    }

    /// [`Objects::put`] from a thread outside any runtime.
    pub fn put_blocking(&self, key: &str, bytes: Bytes) -> Result<(), ObjectError> {
        let (this, key) = (self.clone(), key.to_string());
        block_on(async move { this.put(&key, bytes).await })
    }

    /// [`Objects::exists`] from a thread outside any runtime.
    pub fn exists_blocking(&self, key: &str) -> Result<bool, ObjectError> {
        let (this, key) = (self.clone(), key.to_string());
        block_on(async move { this.exists(&key).await })
    }

    /// [`Objects::download`] from a thread outside any runtime.
    pub fn download_blocking(
        &self,
        key: &str,
        dest: &Path,
        limit: u64,
    ) -> Result<Option<u64>, ObjectError> {
        let (this, key, dest) = (self.clone(), key.to_string(), dest.to_path_buf());
        block_on(async move { this.download(&key, &dest, limit).await })
    }
}
