//! `srv*URL` without a cache downloads into the per-user cache (`NTDBG_SYMBOL_CACHE` here), and
//! the environment switches (`NTDBG_OFFLINE`, `NTDBG_SYMBOL_TIMEOUT_MS`) reach new stores. The
//! test runs alone in a child process: it changes the process environment.

use crate::common;

use std::time::Duration;

use common::http::TestServer;
use common::{crashy_x64_module, no_memory, testdata, Scratch, CRASHY_X64_ID};
use ntdbg_symbols::{default_cache_dir, SymbolPath, SymbolStatus, SymbolStore};

#[test]
fn default_cache_and_environment_switches() {
    ntdbg_testutil::require_testdata!();
    if !ntdbg_testutil::child::in_child() {
        return ntdbg_testutil::child::run_alone(
            module_path!(),
            "default_cache_and_environment_switches",
        );
    }
    let root = Scratch::new("http-default-root");
    root.put(
        &testdata("winelab/x64/crashy.pdb"),
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"),
    );
    let cache = Scratch::new("http-default-cache");
    std::env::set_var("NTDBG_SYMBOL_CACHE", &cache.0);
    std::env::set_var("NTDBG_OFFLINE", "1");
    std::env::set_var("NTDBG_SYMBOL_TIMEOUT_MS", "1234");
    assert_eq!(default_cache_dir(), cache.0);

    let server = TestServer::start(&root.0, Duration::ZERO);
    let path = SymbolPath::parse(&format!("srv*{}", server.url())).unwrap();
    let store = SymbolStore::new(path.clone());
    assert!(store.offline());
    assert_eq!(store.download_timeout(), Duration::from_millis(1234));
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    assert!(server.requests().is_empty());

    std::env::remove_var("NTDBG_OFFLINE");
    std::env::remove_var("NTDBG_SYMBOL_TIMEOUT_MS");
    let store = SymbolStore::new(path);
    assert!(!store.offline());
    assert_eq!(store.download_timeout(), Duration::from_secs(10));
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{:#?}", m.tried());
    let cached = cache
        .0
        .join(format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"));
    assert_eq!(m.symbol_file_path(), Some(cached.as_path()));

    // A local store holding only the compressed crashy.pd_: expanded into the same cache.
    std::fs::remove_dir_all(cache.0.join("crashy.pdb")).unwrap();
    let local = Scratch::new("local-cab-store");
    let pdb = std::fs::read(testdata("winelab/x64/crashy.pdb")).unwrap();
    local.write(
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pd_"),
        &common::cab_of("crashy.pdb", &pdb),
    );
    let store = SymbolStore::new(SymbolPath::parse(&local.path_text()).unwrap());
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{:#?}", m.tried());
    assert_eq!(m.symbol_file_path(), Some(cached.as_path()));
    assert!(m.tried().iter().any(|t| t.contains("CAB expanded")));
    std::env::remove_var("NTDBG_SYMBOL_CACHE");
}
