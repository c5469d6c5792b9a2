//! State the layers above the engine keep with a session, one value per type (the command
//! layer's kernel-structure layout override, for one).

use std::any::{Any, TypeId};
use std::collections::HashMap;

/// One value per type, owned by the session.
#[derive(Default)]
pub(crate) struct Extensions(HashMap<TypeId, Box<dyn Any + Send + Sync>>);

impl Extensions {
    /// Stores `value`, replacing the one of its type.
    pub(crate) fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Box::new(value));
    }

    /// The value of type `T`, when one was stored.
    pub(crate) fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Extensions({} value(s))", self.0.len())
    }
}
