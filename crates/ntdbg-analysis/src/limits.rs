//! How much of a stack the analysis reads and shows.

/// How many frames of the faulting stack the report carries.
pub const REPORT_FRAMES: usize = 32;
