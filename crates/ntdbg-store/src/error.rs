//! The store's error.

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    /// What went wrong, naming the database.
    pub message: String,
    /// The connection was lost or refused (the database restarting): worth reconnecting.
    pub transient: bool,
}

impl StoreError {
    /// A lasting error.
    pub fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            transient: false,
        }
    }

    /// A lost or refused connection.
    pub fn transient(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            transient: true,
        }
    }
}
