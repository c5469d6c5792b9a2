//! Tests of the drop-in profiles as a whole (one test binary for the crate).

mod layering;
