//! The little a query layer needs from a database: statements with typed parameters, rows of
//! integers and text, and which SQL dialect it speaks.

use crate::StoreError;

/// Which SQL the database speaks where the two differ ([`crate::sql`] chooses by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A statement parameter (`$1`, `$2`, …): the store's columns are integers and text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// A `BIGINT`, or NULL.
    Int(Option<i64>),
    /// A `TEXT`, or NULL.
    Text(Option<String>),
}

/// A value read from a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// NULL.
    Null,
    /// An integer.
    Int(i64),
    /// Text.
    Text(String),
}

/// One result row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row(pub Vec<Cell>);

impl Row {
    /// Column `i` as an integer (NULL: `None`).
    pub fn int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.0.get(i) {
            Some(Cell::Int(v)) => Ok(Some(*v)),
            Some(Cell::Null) => Ok(None),
            other => Err(StoreError::new(format!(
                "column {i}: expected an integer, found {other:?}"
            ))),
        }
    }

    /// Column `i` as text (NULL: `None`).
    pub fn text(&self, i: usize) -> Result<Option<String>, StoreError> {
        match self.0.get(i) {
            Some(Cell::Text(v)) => Ok(Some(v.clone())),
            Some(Cell::Null) => Ok(None),
            other => Err(StoreError::new(format!(
                "column {i}: expected text, found {other:?}"
            ))),
        }
    }
}

/// A database connection.
pub trait Backend: Send {
    /// Its dialect.
    fn dialect(&self) -> Dialect;
    /// Runs statements separated by `;`, without parameters or results.
    fn batch(&mut self, sql: &str) -> Result<(), StoreError>;
    /// Runs one statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError>;
    /// Runs one query; its rows.
    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>, StoreError>;
}
