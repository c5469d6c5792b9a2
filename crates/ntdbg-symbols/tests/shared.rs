//! One symbol cache for many stores: each module parsed once per settings and dump memory,
//! never shared across symbol paths, bounded by bytes, and `.reload` parses again.

use std::sync::Arc;

use minidump::{Minidump, MinidumpModule, MinidumpModuleList, Module};
use ntdbg_symbols::{
    SharedBytes, SharedSymbols, SymbolPath, SymbolStatus, SymbolStore, DEFAULT_SYMBOL_MEMORY,
};

/// `crashy.exe` as the repository's sample dump lists it (its PDB is next to the dump).
fn crashy() -> MinidumpModule {
    let dump = Minidump::read_path(ntdbg_testutil::sample("crashy-x64-null.dmp")).unwrap();
    let modules: MinidumpModuleList = dump.get_stream().unwrap();
    let module = modules
        .iter()
        .find(|m| m.code_file().ends_with("crashy.exe"))
        .expect("crashy.exe in the sample")
        .clone();
    module
}

fn samples_dir() -> String {
    ntdbg_testutil::sample("crashy-x64-null.dmp")
        .parent()
        .unwrap()
        .display()
        .to_string()
}

/// An offline store on `path` sharing `shared`.
fn store(path: &str, shared: &Arc<SharedSymbols>) -> SymbolStore {
    let store = SymbolStore::new(SymbolPath::parse(path).unwrap());
    store.set_offline(true);
    store.share(Some(shared.clone()));
    store
}

fn no_memory(_: u64, _: usize) -> Option<SharedBytes> {
    None
}

#[test]
fn a_hundred_stores_parse_a_module_once() {
    let shared = Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY));
    let module = crashy();
    let first = store(&samples_dir(), &shared).module(&module, &no_memory);
    assert_eq!(first.status(), SymbolStatus::Pdb);
    for _ in 1..100 {
        let again = store(&samples_dir(), &shared).module(&module, &no_memory);
        assert!(Arc::ptr_eq(&first, &again));
    }
    let stats = shared.stats();
    assert_eq!((stats.loads, stats.hits, stats.entries), (1, 99, 1));
    assert!(stats.bytes > 0 && stats.bytes <= stats.limit);
}

#[test]
fn stores_with_other_symbol_paths_never_share() {
    let shared = Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY));
    let module = crashy();
    let with = store(&samples_dir(), &shared).module(&module, &no_memory);
    let without = store("/nonexistent-ntdbg-dir", &shared).module(&module, &no_memory);
    assert_eq!(with.status(), SymbolStatus::Pdb);
    assert_eq!(without.status(), SymbolStatus::NoSymbols);
    assert_eq!(shared.stats().loads, 2);
}

#[test]
fn a_dump_whose_memory_differs_gets_its_own_load() {
    let shared = Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY));
    let module = crashy();
    // No image on this path: the loader reads the image from dump memory.
    let path = "/nonexistent-ntdbg-dir";
    let junk = |_: u64, len: usize| Some(SharedBytes::from(vec![0xcc; len]));
    let absent = store(path, &shared).module(&module, &no_memory);
    let present = store(path, &shared).module(&module, &junk);
    assert!(!Arc::ptr_eq(&absent, &present));
    assert_ne!(absent.tried(), present.tried());
    let absent_again = store(path, &shared).module(&module, &no_memory);
    assert!(Arc::ptr_eq(&absent, &absent_again));
    let stats = shared.stats();
    assert_eq!((stats.loads, stats.hits, stats.entries), (2, 1, 2));
}

#[test]
fn the_least_recently_used_entry_goes_first_past_the_limit() {
    let module = crashy();
    let measure = Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY));
    store(&samples_dir(), &measure).module(&module, &no_memory);
    let one = measure.stats().bytes;
    // Room for one entry; two symbol paths are two keys.
    let shared = Arc::new(SharedSymbols::new(one + one / 2));
    let (a, b) = (
        samples_dir(),
        format!("{};/nonexistent-ntdbg-dir", samples_dir()),
    );
    store(&a, &shared).module(&module, &no_memory);
    store(&b, &shared).module(&module, &no_memory);
    let stats = shared.stats();
    assert_eq!((stats.loads, stats.evictions, stats.entries), (2, 1, 1));
    store(&b, &shared).module(&module, &no_memory);
    store(&a, &shared).module(&module, &no_memory);
    let stats = shared.stats();
    assert_eq!((stats.loads, stats.hits, stats.evictions), (3, 1, 2));
    // Nothing fits: nothing is kept.
    let tiny = Arc::new(SharedSymbols::new(1));
    store(&a, &tiny).module(&module, &no_memory);
    store(&a, &tiny).module(&module, &no_memory);
    assert_eq!((tiny.stats().loads, tiny.stats().entries), (2, 0));
}

#[test]
fn reload_parses_again_and_leaves_other_stores_their_symbols() {
    let shared = Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY));
    let module = crashy();
    let other = store(&samples_dir(), &shared);
    let held = other.module(&module, &no_memory);
    let reloading = store(&samples_dir(), &shared);
    reloading.module(&module, &no_memory);
    reloading.clear();
    let fresh = reloading.module(&module, &no_memory);
    assert!(!Arc::ptr_eq(&held, &fresh));
    assert_eq!(held.status(), SymbolStatus::Pdb);
    assert_eq!(held.lookup(0x2134), fresh.lookup(0x2134));
    let stats = shared.stats();
    assert_eq!((stats.loads, stats.hits, stats.entries), (2, 1, 1));
    // A new store gets the fresh load.
    assert!(Arc::ptr_eq(
        &fresh,
        &store(&samples_dir(), &shared).module(&module, &no_memory)
    ));
}
