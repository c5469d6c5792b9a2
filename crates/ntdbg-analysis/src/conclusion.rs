//! A conclusion of the analysis (an inference) and the facts it rests on: what every
//! inference rule, the hang analysis and the bugcheck analysis produce, and the report lists.

use serde::Serialize;

/// A conclusion and the facts it rests on.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Inference {
    /// The conclusion.
    pub text: String,
    /// The facts behind it.
    pub basis: String,
    /// The family of the conclusion, a stable key: `heap_corruption`, `fill_pattern`,
    /// `fail_fast`, `stack_overflow`, `assertion`, `abort`, `breakpoint`, `deliberate`,
    /// `constant_address`, `bit_flip`, `context_thread`, `null_deref`, `access_violation`,
    /// `divide_by_zero`, `invalid_parameter`, `raised_exception`, `cpp_exception`,
    /// `faulting_module`, `bugcheck`, `deadlock`, `hang`, `contention`.
    /// Serialized, but left out of the MCP output schema (its size budget is spent).
    #[schemars(skip)]
    pub kind: String,
}

impl Inference {
    /// An inference of family `kind` (see [`Inference::kind`]).
    pub fn new(kind: &str, text: impl Into<String>, basis: impl Into<String>) -> Inference {
        Inference {
            text: text.into(),
            basis: basis.into(),
            kind: kind.to_string(),
        }
    }
}
