//! [`Store`]: a connection to the crash database, migrated to the current schema.

use crate::backend::{Backend, Param, Row};
use crate::postgres_backend::PostgresBackend;
use crate::sql;
use crate::sqlite_backend::SqliteBackend;
use crate::{DbLocation, StoreError};

/// The crash database (SQLite or PostgreSQL).
pub struct Store {
    db: Box<dyn Backend>,
    location: DbLocation,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the database at `location` (creating a SQLite file when missing) and brings its
    /// schema to the current version.
    pub fn open(location: &DbLocation) -> Result<Store, StoreError> {
        let db: Box<dyn Backend> = match location {
            DbLocation::Sqlite(path) => Box::new(SqliteBackend::open(path)?),
            DbLocation::Postgres(url) => {
                Box::new(PostgresBackend::connect(url, &location.to_string())?)
            }
        };
        let mut store = Store {
            db,
            location: location.clone(),
        };
        store.migrate()?;
        Ok(store)
    }

    /// Where it is (without a password).
    pub fn location(&self) -> &DbLocation {
        &self.location
    }

    /// Applies the migrations this database lacks, under a lock so that processes starting
    /// together migrate once.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let dialect = self.db.dialect();
        let known = sql::MIGRATIONS.len() as i64;
        let location = self.location.to_string();
        self.transaction(|db| {
            if let Some(lock) = sql::migration_lock(dialect) {
                db.execute(lock, &[])?;
            }
            db.batch(sql::CREATE_VERSION_TABLE)?;
            let current = first_int(&db.query(sql::CURRENT_VERSION, &[])?)?.unwrap_or(0);
            if current > known {
                return Err(StoreError::new(format!(
                    "database {location} has schema version {current}; this ntdbg knows \
                     versions up to {known}: use a newer ntdbg"
                )));
            }
            for (i, step) in sql::MIGRATIONS.iter().enumerate().skip(current as usize) {
                db.batch(step)?;
                db.execute(sql::SET_VERSION, &[Param::Int(Some(i as i64 + 1))])?;
            }
            Ok(())
        })
    }

    /// Runs `f` in one transaction: committed when it returns `Ok`, rolled back otherwise.
    pub(crate) fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Backend) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let begin = sql::begin(self.db.dialect());
        self.db.batch(begin)?;
        match f(self.db.as_mut()) {
            Ok(v) => {
                self.db.batch(sql::COMMIT)?;
                Ok(v)
            }
            Err(e) => {
                // A lost connection rolls back by itself; the first error is the one to tell.
                let _ = self.db.batch(sql::ROLLBACK);
                Err(e)
            }
        }
    }

    /// The connection, for statements outside a transaction.
    pub(crate) fn db(&mut self) -> &mut dyn Backend {
        self.db.as_mut()
    }
}

/// The first column of the first row as an integer.
pub(crate) fn first_int(rows: &[Row]) -> Result<Option<i64>, StoreError> {
    match rows.first() {
        Some(r) => r.int(0),
        None => Ok(None),
    }
}
