//! Many modules from a slow HTTP symbol server: `SymbolStore::preload` downloads them at the
//! same time (the server sees several requests in flight), each file once, and reports its
//! progress to an observer.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::http::TestServer;
use common::{module_with_codeview, no_memory, testdata, Scratch, CRASHY_X64_ID};
use minidump::MinidumpModule;
use ntdbg_symbols::{
    DownloadObserver, DownloadProgress, SymbolPath, SymbolStatus, SymbolStore, PARALLEL_LOADS,
};

/// Modules in the test dump.
const MODULES: usize = 6;

/// Every request waits this long on the server.
const DELAY: Duration = Duration::from_millis(300);

/// Module `i`: `modI.dll`, whose PDB `modI.pdb` is the winelab crashy.pdb under another name.
fn module(i: usize) -> MinidumpModule {
    module_with_codeview(
        0x1000_0000 * (i as u64 + 1),
        0x5c000,
        &format!(r"C:\app\mod{i}.dll"),
        &format!(r"C:\build\mod{i}.pdb"),
        CRASHY_X64_ID,
    )
}

#[derive(Default)]
struct Record(Mutex<Vec<DownloadProgress>>);

impl DownloadObserver for Record {
    fn progress(&self, progress: &DownloadProgress) {
        self.0.lock().unwrap().push(progress.clone());
    }
}

#[test]
fn preload_downloads_many_modules_at_once() {
    ntdbg_testutil::require_testdata!();
    let root = Scratch::new("parallel-root");
    for i in 0..MODULES {
        root.put(
            &testdata("winelab/x64/crashy.pdb"),
            &format!("mod{i}.pdb/{CRASHY_X64_ID}/mod{i}.pdb"),
        );
    }
    let cache = Scratch::new("parallel-cache");
    let server = TestServer::start(&root.0, DELAY);
    let path = format!("srv*{}*{}", cache.path_text(), server.url());
    let store = SymbolStore::new(SymbolPath::parse(&path).unwrap());
    store.set_offline(false);
    let record = Arc::new(Record::default());
    store.set_download_observer(Some(record.clone()));

    let modules: Vec<MinidumpModule> = (0..MODULES).map(module).collect();
    let refs: Vec<&MinidumpModule> = modules.iter().collect();
    store.preload(&refs, &no_memory);

    // Loaded, each from its own download.
    for (i, m) in modules.iter().enumerate() {
        let symbols = store.loaded(m.raw.base_of_image).expect("preloaded");
        assert_eq!(
            symbols.status(),
            SymbolStatus::Pdb,
            "{:#?}",
            symbols.tried()
        );
        assert!(cache
            .0
            .join(format!("mod{i}.pdb/{CRASHY_X64_ID}/mod{i}.pdb"))
            .is_file());
    }
    let log = server.requests();
    for i in 0..MODULES {
        let get = format!("GET /mod{i}.pdb/{CRASHY_X64_ID}/mod{i}.pdb 200");
        assert_eq!(log.iter().filter(|l| **l == get).count(), 1, "{log:#?}");
    }
    // Concurrency as the server saw it: several modules' requests at the same time, never
    // more than the pool.
    let most = server.max_in_flight();
    assert!(most > 1, "requests were not concurrent: {most} at most");
    assert!(most <= PARALLEL_LOADS, "{most} requests at once");

    // The observer saw the burst of six modules, the PDB transfers, and the end.
    let seen = record.0.lock().unwrap().clone();
    assert!(seen.iter().any(|p| p.modules_total == MODULES), "{seen:#?}");
    assert!(
        seen.iter().any(|p| p
            .transfers
            .iter()
            .any(|t| t.file == "mod3.pdb" && t.bytes > 0)),
        "{seen:#?}"
    );
    assert!(seen.last().unwrap().is_idle(), "{seen:#?}");

    // A second preload loads nothing and asks nothing.
    let before = server.requests().len();
    store.preload(&refs, &no_memory);
    assert_eq!(
        store.module(&modules[2], &no_memory).status(),
        SymbolStatus::Pdb
    );
    assert_eq!(server.requests().len(), before);
}

#[test]
fn preload_keeps_each_modules_time_limit_and_offline_mode() {
    ntdbg_testutil::require_testdata!();
    let root = Scratch::new("parallel-slow-root");
    for i in 0..MODULES {
        root.put(
            &testdata("winelab/x64/crashy.pdb"),
            &format!("mod{i}.pdb/{CRASHY_X64_ID}/mod{i}.pdb"),
        );
    }
    let cache = Scratch::new("parallel-slow-cache");
    let server = TestServer::start(&root.0, Duration::from_secs(3));
    let path = SymbolPath::parse(&format!("srv*{}*{}", cache.path_text(), server.url())).unwrap();
    let modules: Vec<MinidumpModule> = (0..MODULES).map(module).collect();
    let refs: Vec<&MinidumpModule> = modules.iter().collect();

    // Offline: loads, asks nothing.
    let offline = SymbolStore::new(path.clone());
    offline.set_offline(true);
    offline.preload(&refs, &no_memory);
    assert!(server.requests().is_empty());
    assert_eq!(
        offline.module(&modules[0], &no_memory).status(),
        SymbolStatus::NoSymbols
    );

    // A server slower than the limit: every module gives up (its own request timed out, or
    // the server was already known to be unreachable), none hangs.
    let store = SymbolStore::new(path);
    store.set_offline(false);
    store.set_download_timeout(Duration::from_millis(200));
    store.preload(&refs, &no_memory);
    for m in &modules {
        let symbols = store.loaded(m.raw.base_of_image).expect("preloaded");
        assert_eq!(symbols.status(), SymbolStatus::NoSymbols);
        assert!(
            symbols
                .tried()
                .iter()
                .any(|t| t.contains("timed out") || t.contains("unreachable earlier")),
            "{:#?}",
            symbols.tried()
        );
    }
}
