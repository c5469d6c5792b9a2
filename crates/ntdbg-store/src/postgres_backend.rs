//! [`Backend`] on PostgreSQL (the synchronous `postgres` crate, no TLS: loopback, a Unix
//! socket or a trusted network).

use crate::backend::{Backend, Cell, Dialect, Param, Row};
use crate::StoreError;
use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, Config, NoTls};
use std::str::FromStr;
use std::time::Duration;

/// Longest wait for a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Server-side bounds on every statement and lock wait (milliseconds), unless the URL sets
/// `options` itself.
const SESSION_OPTIONS: &str = "-c statement_timeout=600000 -c lock_timeout=120000";

/// A PostgreSQL connection.
pub(crate) struct PostgresBackend {
    client: Client,
}

impl PostgresBackend {
    /// Connects to `url`; `shown` is the URL without its password, for messages.
    pub(crate) fn connect(url: &str, shown: &str) -> Result<PostgresBackend, StoreError> {
        let mut config =
            Config::from_str(url).map_err(|e| StoreError::new(format!("--db {shown}: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_options().is_none() {
            config.options(SESSION_OPTIONS);
        }
        let client = config
            .connect(NoTls)
            .map_err(|e| classify(e, &format!("cannot connect to {shown}")))?;
        Ok(PostgresBackend { client })
    }
}

/// A lost or refused connection (server restarting, shutting down, not yet accepting) is
/// transient; anything else is not.
fn classify(e: postgres::Error, context: &str) -> StoreError {
    let message = format!("{context}: {e}");
    let transient = e.is_closed()
        || e.code().is_some_and(|c| {
            c.code().starts_with("08")
                || *c == SqlState::ADMIN_SHUTDOWN
                || *c == SqlState::CRASH_SHUTDOWN
                || *c == SqlState::CANNOT_CONNECT_NOW
        })
        || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    StoreError { message, transient }
}

fn bound(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| match p {
            Param::Int(v) => v as &(dyn ToSql + Sync),
            Param::Text(v) => v as &(dyn ToSql + Sync),
        })
        .collect()
}

fn cell(row: &postgres::Row, i: usize) -> Result<Cell, postgres::Error> {
    let ty = row.columns()[i].type_();
    Ok(if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?
            .map_or(Cell::Null, Cell::Int)
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?
            .map_or(Cell::Null, |v| Cell::Int(v.into()))
    } else {
        row.try_get::<_, Option<String>>(i)?
            .map_or(Cell::Null, Cell::Text)
    })
}

impl Backend for PostgresBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.client
            .batch_execute(sql)
            .map_err(|e| classify(e, "database"))
    }

    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
        self.client
            .execute(sql, &bound(params))
            .map_err(|e| classify(e, "database"))
    }

    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>, StoreError> {
        let rows = self
            .client
            .query(sql, &bound(params))
            .map_err(|e| classify(e, "database"))?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| cell(r, i))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Row)
                    .map_err(|e| classify(e, "database"))
            })
            .collect()
    }
}
