//! `MemoryView::shared_bytes` lends exactly the bytes `read_exact` copies, or nothing: checked
//! on every captured range of real dumps, at lengths inside a range, across range boundaries
//! and past the captured memory.

use ntdbg_targets::{open, Target};

/// Every answer of `shared_bytes` equals `read_exact`'s; returns how many were lent.
fn check_consistent(target: &dyn Target) -> usize {
    let mut lent = 0;
    for region in target.regions() {
        let size = usize::try_from(region.size).unwrap();
        for (addr, len) in [
            (region.base, size),
            (region.base, size / 2),
            (region.base + region.size / 2, size - size / 2),
            // Into the next range, or past the captured memory.
            (region.base, size + 1),
            (region.base + region.size / 2, size),
        ] {
            if let Some((owner, range)) = target.shared_bytes(addr, len) {
                let bytes = owner.bytes().get(range).expect("range inside the owner");
                assert_eq!(
                    Some(bytes.to_vec()),
                    target.read_exact(addr, len),
                    "{addr:#x} len {len:#x}"
                );
                lent += 1;
            }
        }
    }
    lent
}

#[test]
fn lent_bytes_equal_copied_bytes_on_the_samples() {
    for name in ["crashy-x64-null.dmp", "crashy-x64-stack.dmp"] {
        let dump = open(&ntdbg_testutil::sample(name)).unwrap();
        assert!(check_consistent(dump.as_ref()) > 0, "{name}: nothing lent");
    }
}

#[test]
fn lent_bytes_equal_copied_bytes_on_upstream_dumps() {
    ntdbg_testutil::require_testdata!();
    for rel in [
        "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp",
        "google-breakpad/src/processor/testdata/minidump2.dmp",
    ] {
        let dump = open(&ntdbg_testutil::testdata(rel)).unwrap();
        check_consistent(dump.as_ref());
    }
}

#[test]
fn nothing_is_lent_outside_captured_memory() {
    let dump = open(&ntdbg_testutil::sample("crashy-x64-null.dmp")).unwrap();
    assert!(dump.shared_bytes(0, 16).is_none());
    assert!(dump.shared_bytes(u64::MAX - 4, 16).is_none());
    let last = dump.regions().into_iter().last().unwrap();
    assert!(dump.shared_bytes(last.base, usize::MAX).is_none());
}
