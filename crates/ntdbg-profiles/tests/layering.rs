//! Layering: no crate below the front ends names an MCP tool in a message. Hints that name
//! tools are added by this server, by error code; the CLI adds its own.

use ntdbg_mcp::{AllowedDirs, NtdbgServer};
use ntdbg_profiles::{surface, Profile};
use std::path::{Path, PathBuf};

/// The crates whose messages every front end shows.
const LOWER_CRATES: [&str; 5] = [
    "ntdbg-engine",
    "ntdbg-commands",
    "ntdbg-analysis",
    "ntdbg-targets",
    "ntdbg-symbols",
];

/// Every tool name of every profile that cannot be an ordinary word (`attach` can).
fn tool_names() -> Vec<String> {
    let allowed = AllowedDirs::new(&[std::env::temp_dir()]).expect("temp dir");
    let mut names: Vec<String> = Profile::ALL
        .into_iter()
        .flat_map(|p| {
            NtdbgServer::new(allowed.clone())
                .with_surface(surface(p, None))
                .tools()
        })
        .map(|t| t.name.to_string())
        .filter(|n| n.contains('_'))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The `.rs` files under `dir`, tests and snapshots excluded.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                sources(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The contents of the string literals of Rust source `text`, comments left out (good
/// enough for this check: char literals holding `"` and raw strings with `#` are rare in
/// these crates, and a missed literal only weakens the check).
fn string_literals(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => i += 3,
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                i = text
                    .get(i + 3..)
                    .and_then(|t| t.find('\''))
                    .map_or(bytes.len(), |n| i + 4 + n);
            }
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                out.push(text[start..j.min(bytes.len())].to_string());
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

#[test]
fn the_literal_reader_sees_strings_not_comments() {
    let text = "// break_in\nlet a = \"x \\\" y\"; let c = '\"'; f(\"z\");";
    assert_eq!(string_literals(text), ["x \\\" y", "z"]);
}

#[test]
fn no_crate_below_the_front_ends_names_an_mcp_tool() {
    let names = tool_names();
    assert!(names.contains(&"break_in".to_string()), "{names:?}");
    assert!(names.contains(&"read_output".to_string()), "{names:?}");
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for name in LOWER_CRATES {
        let mut files = Vec::new();
        sources(&crates.join(name).join("src"), &mut files);
        assert!(!files.is_empty(), "no sources found for {name}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for literal in string_literals(&text) {
                for tool in names.iter().filter(|t| literal.contains(t.as_str())) {
                    found.push(format!("{}: {tool} in \"{literal}\"", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "MCP tool names below the front ends:\n{}",
        found.join("\n")
    );
}
