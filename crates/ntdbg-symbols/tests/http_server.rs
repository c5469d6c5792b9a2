//! Symbol-server downloads against a real HTTP server on 127.0.0.1, started by each test over
//! a store-layout folder: download into the cache, cache reuse with the server stopped,
//! GUID/age mismatch rejection, 404 and the negative cache, a slow server's timeout, offline
//! mode, CAB-compressed files, `file.ptr` and Breakpad `.sym` servers, cancelled downloads.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::http::TestServer;
use common::{
    crashy_x64_module, crashy_x64_wine_module, no_memory, testdata, Scratch, CRASHY_X64_ID,
};
use ntdbg_symbols::{SymbolPath, SymbolStatus, SymbolStore};

const CRASHY_EXE_KEY: &str = "6B0CCCD25c000";

/// A store-layout folder with the winelab x64 crashy.exe and crashy.pdb.
fn crashy_store(name: &str) -> Scratch {
    let store = Scratch::new(name);
    store.put(
        &testdata("winelab/x64/crashy.exe"),
        &format!("crashy.exe/{CRASHY_EXE_KEY}/crashy.exe"),
    );
    store.put(
        &testdata("winelab/x64/crashy.pdb"),
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"),
    );
    store
}

fn store_for(cache: &Path, url: &str) -> SymbolStore {
    let store =
        SymbolStore::new(SymbolPath::parse(&format!("srv*{}*{url}", cache.display())).unwrap());
    store.set_offline(false);
    store
}

fn requests_in(tried: &[String]) -> usize {
    tried.iter().filter(|t| t.contains("http://")).count()
}

fn crashy_pdb_in(cache: &Path) -> PathBuf {
    cache.join(format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"))
}

#[test]
fn download_then_cache_hit_with_the_server_stopped() {
    ntdbg_testutil::require_testdata!();
    let root = crashy_store("http-root");
    let cache = Scratch::new("http-cache");
    let mut server = TestServer::start(&root.0, Duration::ZERO);

    // Wine dump: no CodeView record, so the image comes first, then the PDB it names.
    let store = store_for(&cache.0, &server.url());
    let t = Instant::now();
    let first = store.module(&crashy_x64_wine_module(), &no_memory);
    let download_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(first.status(), SymbolStatus::Pdb, "{:#?}", first.tried());
    assert_eq!(first.lookup(0x2134).unwrap().name, "crash_null_write(int*)");
    assert_eq!(
        first.symbol_file_path(),
        Some(crashy_pdb_in(&cache.0).as_path())
    );
    assert!(cache
        .0
        .join(format!("crashy.exe/{CRASHY_EXE_KEY}/crashy.exe"))
        .is_file());
    let log = server.requests();
    assert!(
        log.contains(&format!("GET /crashy.exe/{CRASHY_EXE_KEY}/crashy.exe 200")),
        "{log:?}"
    );
    assert!(
        log.contains(&format!("GET /crashy.pdb/{CRASHY_X64_ID}/crashy.pdb 200")),
        "{log:?}"
    );
    assert!(
        first
            .tried()
            .iter()
            .any(|t| t.contains("crashy.pdb: 200, ") && t.contains(" bytes, ")),
        "{:#?}",
        first.tried()
    );

    // Within the session: reloading finds the files in the cache, no new request.
    store.clear();
    let again = store.module(&crashy_x64_wine_module(), &no_memory);
    assert_eq!(again.status(), SymbolStatus::Pdb);
    assert_eq!(server.requests().len(), log.len());

    // A new session with the server gone: the cache serves everything.
    server.stop();
    let store = store_for(&cache.0, &server.url());
    let t = Instant::now();
    let second = store.module(&crashy_x64_wine_module(), &no_memory);
    let hit_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(second.status(), SymbolStatus::Pdb, "{:#?}", second.tried());
    assert_eq!(requests_in(second.tried()), 0, "{:#?}", second.tried());
    eprintln!("crashy.exe + crashy.pdb: download {download_ms:.1} ms, cache hit {hit_ms:.1} ms");
}

#[test]
fn symsrv_spelling_and_codeview_modules() {
    ntdbg_testutil::require_testdata!();
    let root = crashy_store("http-symsrv-root");
    let cache = Scratch::new("http-symsrv-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let path = format!("symsrv*symsrv.dll*{}*{}", cache.0.display(), server.url());
    let store = SymbolStore::new(SymbolPath::parse(&path).unwrap());
    store.set_offline(false);
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{:#?}", m.tried());
    assert!(crashy_pdb_in(&cache.0).is_file());
}

#[test]
fn guid_age_mismatch_is_rejected_and_deleted() {
    ntdbg_testutil::require_testdata!();
    let root = Scratch::new("http-mismatch-root");
    // Another PDB filed under crashy's key.
    root.put(
        &testdata(
            "rizin-test-pdb-repository/user32.pdb/15F778B3671D4EFDBDCDE79905308B792/user32.pdb",
        ),
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pdb"),
    );
    let cache = Scratch::new("http-mismatch-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let store = store_for(&cache.0, &server.url());
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols, "{:#?}", m.tried());
    assert!(
        m.tried()
            .iter()
            .any(|t| t.contains("GUID/age mismatch") && t.contains("deleted from the cache")),
        "{:#?}",
        m.tried()
    );
    assert!(!crashy_pdb_in(&cache.0).exists());
}

#[test]
fn not_found_is_remembered_for_the_session() {
    let root = Scratch::new("http-404-root");
    let cache = Scratch::new("http-404-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let store = store_for(&cache.0, &server.url());
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    let pdb_url = format!("{}/crashy.pdb/{CRASHY_X64_ID}/crashy.pdb", server.url());
    assert!(
        m.tried()
            .iter()
            .any(|t| t.starts_with(&format!("{pdb_url}: 404 not found, "))),
        "{:#?}",
        m.tried()
    );
    // Image, compressed image, image pointer, PDB, .pd_, file.ptr, .sym and its two
    // alternatives: every URL once.
    let asked = server.requests().len();
    assert!(asked >= 6, "{:?}", server.requests());
    store.clear();
    let again = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(server.requests().len(), asked, "{:?}", server.requests());
    assert!(
        again.tried().iter().any(|t| t.contains("known missing")),
        "{:#?}",
        again.tried()
    );
}

#[test]
fn slow_server_times_out_and_is_not_asked_again() {
    ntdbg_testutil::require_testdata!();
    let root = crashy_store("http-slow-root");
    let cache = Scratch::new("http-slow-cache");
    let server = TestServer::start(&root.0, Duration::from_secs(3));
    let store = store_for(&cache.0, &server.url());
    store.set_download_timeout(Duration::from_millis(300));
    let t = Instant::now();
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(m.status(), SymbolStatus::NoSymbols, "{:#?}", m.tried());
    assert!(
        m.tried().iter().any(|t| t.contains("timed out")),
        "{:#?}",
        m.tried()
    );
    // The next module does not wait for it again.
    store.clear();
    let t = Instant::now();
    let again = store.module(&crashy_x64_module(), &no_memory);
    assert!(
        t.elapsed() < Duration::from_millis(250),
        "{:?}",
        t.elapsed()
    );
    assert!(
        again
            .tried()
            .iter()
            .any(|t| t.contains("unreachable earlier")),
        "{:#?}",
        again.tried()
    );
}

#[test]
fn offline_mode_contacts_nothing() {
    ntdbg_testutil::require_testdata!();
    let root = crashy_store("http-offline-root");
    let cache = Scratch::new("http-offline-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let store = store_for(&cache.0, &server.url());
    store.set_offline(true);
    let m = store.module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::NoSymbols);
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(
        m.tried()
            .iter()
            .any(|t| t.contains("offline, symbol server not contacted")),
        "{:#?}",
        m.tried()
    );
}

#[test]
fn compressed_pointer_and_breakpad_files() {
    ntdbg_testutil::require_testdata!();
    // crashy.pd_ (a CAB holding crashy.pdb) and no plain PDB.
    let pdb = std::fs::read(testdata("winelab/x64/crashy.pdb")).unwrap();
    let cab_bytes = common::cab_of("crashy.pdb", &pdb);
    let root = Scratch::new("http-cab-root");
    root.write(
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.pd_"),
        &cab_bytes,
    );
    let cache = Scratch::new("http-cab-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let m = store_for(&cache.0, &server.url()).module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{:#?}", m.tried());
    assert!(
        m.tried().iter().any(|t| t.contains("CAB expanded")),
        "{:#?}",
        m.tried()
    );
    assert_eq!(std::fs::read(crashy_pdb_in(&cache.0)).unwrap(), pdb);
    drop(server);

    // file.ptr pointing to a local file.
    let root = Scratch::new("http-ptr-root");
    let local = testdata("winelab/x64/crashy.pdb");
    root.write(
        &format!("crashy.pdb/{CRASHY_X64_ID}/file.ptr"),
        format!("PATH:{}", local.display()).as_bytes(),
    );
    let cache = Scratch::new("http-ptr-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let m = store_for(&cache.0, &server.url()).module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Pdb, "{:#?}", m.tried());
    assert_eq!(m.symbol_file_path(), Some(local.as_path()));
    drop(server);

    // A Breakpad server: crashy.pdb/KEY/crashy.sym only.
    let root = Scratch::new("http-sym-root");
    let sym = ntdbg_symbols::pdb_to_breakpad(&testdata("winelab/x64/crashy.pdb")).unwrap();
    root.write(
        &format!("crashy.pdb/{CRASHY_X64_ID}/crashy.sym"),
        sym.as_bytes(),
    );
    let cache = Scratch::new("http-sym-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let m = store_for(&cache.0, &server.url()).module(&crashy_x64_module(), &no_memory);
    assert_eq!(m.status(), SymbolStatus::Breakpad, "{:#?}", m.tried());
    assert!(cache
        .0
        .join(format!("crashy.pdb/{CRASHY_X64_ID}/crashy.sym"))
        .is_file());
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn a_cancelled_download_leaves_no_file_and_is_retried_later() {
    ntdbg_testutil::require_testdata!();
    let root = crashy_store("http-cancel-root");
    let cache = Scratch::new("http-cancel-cache");
    let server = TestServer::start(&root.0, Duration::ZERO);
    let store = store_for(&cache.0, &server.url());

    // Cancelled between chunks: the check turns true (and stays so, as the engine's
    // interrupt does) once a transfer has begun writing.
    let dir = cache.0.clone();
    let latched = std::sync::atomic::AtomicBool::new(false);
    store.set_cancel_check(Some(std::sync::Arc::new(move || {
        use std::sync::atomic::Ordering::Relaxed;
        latched.load(Relaxed) || {
            let begun = !files_under(&dir).is_empty();
            latched.store(begun, Relaxed);
            begun
        }
    })));
    let cut = store.module(&crashy_x64_wine_module(), &no_memory);
    assert_ne!(cut.status(), SymbolStatus::Pdb);
    assert!(
        cut.tried()
            .iter()
            .any(|t| t.contains("transfer failed: cancelled")),
        "{:#?}",
        cut.tried()
    );
    assert_eq!(
        files_under(&cache.0),
        Vec::<PathBuf>::new(),
        "no partial file"
    );

    // Cancelled between files: nothing is requested.
    store.set_cancel_check(Some(std::sync::Arc::new(|| true)));
    let requests = server.requests().len();
    let skipped = store.module(&crashy_x64_wine_module(), &no_memory);
    assert!(
        skipped
            .tried()
            .iter()
            .any(|t| t.ends_with("not requested: cancelled")),
        "{:#?}",
        skipped.tried()
    );
    assert_eq!(server.requests().len(), requests);

    // Not cancelled: the module was not remembered without symbols, it loads now.
    store.set_cancel_check(None);
    let loaded = store.module(&crashy_x64_wine_module(), &no_memory);
    assert_eq!(loaded.status(), SymbolStatus::Pdb, "{:#?}", loaded.tried());
}
