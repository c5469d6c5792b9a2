//! `SymbolStore::decode_ahead`: a `.sym.xz` is decoded into the symbol cache
//! (`NTDBG_SYMBOL_CACHE` here) before its module is asked for, the module stays unloaded until
//! then, and its load reads the copy. One test in its own binary: it sets the process
//! environment.

mod common;

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{module_with_codeview, no_memory, Scratch};
use ntdbg_symbols::{stop_decoding_ahead, SymbolPath, SymbolStatus, SymbolStore};

const ID: &str = "0123456789ABCDEF0123456789ABCDEF1";
const PLAIN_ID: &str = "00112233445566778899AABBCCDDEEFF1";

fn xz(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    liblzma::read::XzEncoder::new(text.as_bytes(), 6)
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn sym(id: &str, name: &str) -> String {
    format!(
        "MODULE windows x86_64 {id} {name}.pdb\nFUNC 1000 10 0 {name}_f\nPUBLIC 2000 0 {name}_g\n"
    )
}

/// The files in the cache's folder of decoded copies.
fn copies(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache.join("unpacked-sym"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn compressed_symbols_are_decoded_ahead_and_the_load_reads_them() {
    let symbols = Scratch::new("ahead-symbols");
    symbols.write(&format!("app.pdb/{ID}/app.sym.xz"), &xz(&sym(ID, "app")));
    // A plain `.sym` needs no decoding: nothing is done for it.
    symbols.write(
        &format!("lib.pdb/{PLAIN_ID}/lib.sym"),
        sym(PLAIN_ID, "lib").as_bytes(),
    );
    let cache = Scratch::new("ahead-cache");
    std::env::set_var("NTDBG_SYMBOL_CACHE", &cache.0);
    let store = SymbolStore::new(SymbolPath::parse(&symbols.path_text()).unwrap());
    store.set_offline(true);
    let app = module_with_codeview(0x10000, 0x10000, r"C:\app.exe", "app.pdb", ID);
    let lib = module_with_codeview(0x40000, 0x10000, r"C:\lib.dll", "lib.pdb", PLAIN_ID);
    // Without a CodeView record there is no file to guess.
    let anonymous = minidump::MinidumpModule::new(0x80000, 0x1000, r"C:\x.dll");

    store.decode_ahead(&[&app, &lib, &anonymous]);
    let start = Instant::now();
    while copies(&cache.0).iter().all(|c| c.starts_with(".tmp-")) {
        assert!(start.elapsed() < Duration::from_secs(30), "no copy decoded");
        std::thread::sleep(Duration::from_millis(10));
    }
    stop_decoding_ahead();
    let written = copies(&cache.0);
    assert_eq!(written.len(), 1, "{written:?}");
    assert!(written[0].ends_with(".sym"), "{written:?}");
    assert!(
        store.loaded(0x10000).is_none(),
        "decoding ahead loads nothing"
    );

    let symbols = store.module(&app, &no_memory);
    assert_eq!(
        symbols.status(),
        SymbolStatus::Breakpad,
        "{:#?}",
        symbols.tried()
    );
    assert_eq!(symbols.lookup(0x1004).unwrap().name, "app_f");
    assert_eq!(copies(&cache.0), written, "the load read the copy");
    // Stopping with nothing to do returns at once.
    stop_decoding_ahead();
}
