//! Helpers for the corrupt-input tests (`ntdbg-targets/tests/corrupt.rs`,
//! `ntdbg-commands/tests/corrupt_session.rs`): damaged variants of a dump (cut, bit-flipped,
//! fields smashed), a tracking allocator, panic capture and temp folders.
//!
//! Everything here is deliberately independent of the ntdbg crates: the MDMP header and the
//! stream directory are parsed by hand, so that a bug in the code under test cannot hide the
//! boundaries we cut at.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

// ---------------------------------------------------------------------------------------------
// Allocation tracking: the largest single request made on the current thread.

/// A global allocator that remembers, per thread, the largest single request it was asked for.
/// A test installs it with `#[global_allocator]`.
#[derive(Debug)]
pub struct TrackingAlloc;

thread_local! {
    static LARGEST_REQUEST: Cell<usize> = const { Cell::new(0) };
}

fn note_request(size: usize) {
    // `try_with`: the slot may already be gone while a thread is shutting down.
    let _ = LARGEST_REQUEST.try_with(|c| {
        if size > c.get() {
            c.set(size);
        }
    });
}

// SAFETY: every call is forwarded unchanged to `System`; we only record the requested size.
unsafe impl GlobalAlloc for TrackingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_request(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_request(layout.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_request(new_size);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Resets the current thread's largest-request record and returns the old value.
pub fn take_largest_request() -> usize {
    LARGEST_REQUEST.with(|c| c.replace(0))
}

// ---------------------------------------------------------------------------------------------
// A tiny deterministic PRNG.

/// xorshift64*: deterministic, dependency-free, good enough to pick bytes to break.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a seed (0 is remapped: xorshift must not start at zero).
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// A non-zero byte (to XOR with, so the byte really changes).
    pub fn nonzero_byte(&mut self) -> u8 {
        (self.next_u64() % 255) as u8 + 1
    }
    /// `n` random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-rolled MDMP layout.

/// The minidump header is 32 bytes: signature, version, stream count, directory RVA,
/// checksum, time stamp, flags (u64).
pub const HEADER_SIZE: usize = 32;
/// One stream directory entry: type, data size, RVA.
pub const DIR_ENTRY_SIZE: usize = 12;

/// One stream directory entry, as read from the file.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    /// Where the directory entry itself is.
    pub entry_offset: usize,
    /// The stream type.
    pub kind: u32,
    /// The stream's size in bytes.
    pub size: u32,
    /// The stream's file offset.
    pub rva: u32,
}

/// The header and stream directory of a minidump, parsed by hand.
#[derive(Debug, Clone)]
pub struct DumpLayout {
    /// Where the directory starts.
    pub dir_rva: usize,
    /// The stream count the header claims.
    pub claimed_streams: u32,
    /// The directory entries that lie inside the file.
    pub streams: Vec<Stream>,
}

/// Reads a little-endian u32 at `off`, if the file is long enough.
pub fn u32_at(data: &[u8], off: usize) -> Option<u32> {
    let b = data.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes(b.try_into().ok()?))
}

/// Writes a little-endian u32 at `off` when it fits.
pub fn put_u32(data: &mut [u8], off: usize, value: u32) {
    if let Some(b) = off.checked_add(4).and_then(|end| data.get_mut(off..end)) {
        b.copy_from_slice(&value.to_le_bytes());
    }
}

/// Parses the MDMP header and directory. `None` when the file is not an MDMP at all.
pub fn parse_layout(data: &[u8]) -> Option<DumpLayout> {
    if !data.starts_with(b"MDMP") || data.len() < HEADER_SIZE {
        return None;
    }
    let claimed_streams = u32_at(data, 8)?;
    let dir_rva = u32_at(data, 12)? as usize;
    let mut streams = Vec::new();
    for i in 0..claimed_streams as usize {
        let entry_offset = dir_rva + i * DIR_ENTRY_SIZE;
        let (Some(kind), Some(size), Some(rva)) = (
            u32_at(data, entry_offset),
            u32_at(data, entry_offset + 4),
            u32_at(data, entry_offset + 8),
        ) else {
            break;
        };
        streams.push(Stream {
            entry_offset,
            kind,
            size,
            rva,
        });
    }
    Some(DumpLayout {
        dir_rva,
        claimed_streams,
        streams,
    })
}

/// Stream types whose inner records we also know how to find (MINIDUMP_STREAM_TYPE).
pub const THREAD_LIST: u32 = 3;
/// The module list stream.
pub const MODULE_LIST: u32 = 4;
/// The memory list stream.
pub const MEMORY_LIST: u32 = 5;
/// The exception stream.
pub const EXCEPTION: u32 = 6;
/// The 64-bit memory list stream.
pub const MEMORY64_LIST: u32 = 9;

/// Offsets of interesting `(size, rva)` location-descriptor pairs inside the streams: thread
/// stacks and contexts, module names and CodeView records, memory ranges, the exception
/// context. Each entry is `(offset_of_size_field, offset_of_rva_field)`.
pub fn location_fields(data: &[u8], layout: &DumpLayout) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for s in &layout.streams {
        let base = s.rva as usize;
        let end = base.saturating_add(s.size as usize).min(data.len());
        let count = u32_at(data, base).unwrap_or(0) as usize;
        match s.kind {
            THREAD_LIST => {
                // MINIDUMP_THREAD is 48 bytes: stack descriptor at +24 (start u64, size, rva),
                // context location at +40 (size, rva).
                for i in 0..count.min(64) {
                    let t = base + 4 + i * 48;
                    if t + 48 > end {
                        break;
                    }
                    out.push((t + 32, t + 36));
                    out.push((t + 40, t + 44));
                }
            }
            MODULE_LIST => {
                // MINIDUMP_MODULE is 108 bytes: name RVA at +20, CodeView record at +76,
                // misc record at +84.
                for i in 0..count.min(64) {
                    let m = base + 4 + i * 108;
                    if m + 108 > end {
                        break;
                    }
                    out.push((m + 8, m + 20));
                    out.push((m + 76, m + 80));
                    out.push((m + 84, m + 88));
                }
            }
            MEMORY_LIST => {
                // MINIDUMP_MEMORY_DESCRIPTOR is 16 bytes: start u64, size, rva.
                for i in 0..count.min(64) {
                    let d = base + 4 + i * 16;
                    if d + 16 > end {
                        break;
                    }
                    out.push((d + 8, d + 12));
                }
            }
            // MINIDUMP_EXCEPTION_STREAM: thread id, alignment, 152-byte record, context
            // location (size, rva) at +160.
            EXCEPTION if base + 168 <= end => out.push((base + 160, base + 164)),
            _ => {}
        }
    }
    out
}

/// Every offset worth cutting the file at: the header, each directory entry, each stream's
/// start and end (and a byte either side), and the records the streams point at.
pub fn boundaries(data: &[u8]) -> BTreeSet<usize> {
    let mut cuts: BTreeSet<usize> = [0, 1, 3, 4, 7, 8, 12, 16, 24, 31, HEADER_SIZE].into();
    let Some(layout) = parse_layout(data) else {
        return cuts;
    };
    let mut add = |off: usize| {
        for o in [off.saturating_sub(1), off, off.saturating_add(1)] {
            if o < data.len() {
                cuts.insert(o);
            }
        }
    };
    add(layout.dir_rva);
    for s in &layout.streams {
        add(s.entry_offset);
        add(s.entry_offset + DIR_ENTRY_SIZE);
        add(s.rva as usize);
        add(s.rva as usize + 4);
        add(s.rva as usize + s.size as usize);
    }
    for (size_off, rva_off) in location_fields(data, &layout) {
        let size = u32_at(data, size_off).unwrap_or(0) as usize;
        let rva = u32_at(data, rva_off).unwrap_or(0) as usize;
        add(rva);
        add(rva + size);
        add(rva + size / 2);
    }
    cuts
}

// ---------------------------------------------------------------------------------------------
// Variants.

/// How a variant differs from its original.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Keep only the first `n` bytes.
    Truncate(usize),
    /// XOR bytes: `(offset, mask)`.
    Xor(Vec<(usize, u8)>),
    /// Overwrite little-endian u32 fields: `(offset, value)`.
    PutU32(Vec<(usize, u32)>),
}

/// One damaged copy of a dump, described rather than held (originals can be megabytes).
#[derive(Debug, Clone)]
pub struct Variant {
    /// A short file-name-safe label saying what was done.
    pub label: String,
    /// What was done.
    pub edit: Edit,
}

impl Variant {
    /// The damaged bytes.
    pub fn apply(&self, original: &[u8]) -> Vec<u8> {
        match &self.edit {
            Edit::Truncate(n) => original[..(*n).min(original.len())].to_vec(),
            Edit::Xor(flips) => {
                let mut bytes = original.to_vec();
                for &(at, mask) in flips {
                    if let Some(b) = bytes.get_mut(at) {
                        *b ^= mask;
                    }
                }
                bytes
            }
            Edit::PutU32(puts) => {
                let mut bytes = original.to_vec();
                for &(at, value) in puts {
                    put_u32(&mut bytes, at, value);
                }
                bytes
            }
        }
    }
}

/// The original cut at every boundary, plus `extra` evenly spread offsets and the 64 first.
pub fn truncations(data: &[u8], extra: usize) -> Vec<Variant> {
    let mut cuts = boundaries(data);
    cuts.extend(0..64.min(data.len()));
    if data.len() > 1 && extra > 0 {
        for k in 0..extra {
            cuts.insert(k * (data.len() - 1) / extra);
        }
    }
    cuts.retain(|&c| c < data.len());
    cuts.into_iter()
        .map(|c| Variant {
            label: format!("trunc{c}"),
            edit: Edit::Truncate(c),
        })
        .collect()
}

/// `count` copies with 1 to 8 random bytes XOR-ed, from fixed seeds.
pub fn random_flips(data: &[u8], seed: u64, count: usize) -> Vec<Variant> {
    let mut rng = XorShift::new(seed);
    if data.is_empty() {
        return Vec::new();
    }
    (0..count)
        .map(|i| {
            let flips = 1 + rng.below(8);
            let edits = (0..flips)
                .map(|_| (rng.below(data.len()), rng.nonzero_byte()))
                .collect();
            Variant {
                label: format!("flip{seed}_{i}"),
                edit: Edit::Xor(edits),
            }
        })
        .collect()
}

/// Values that break size, count and offset fields.
pub fn hostile_u32s(len: usize, rng: &mut XorShift) -> Vec<u32> {
    vec![
        0,
        1,
        0x7FFF_FFFF,
        0x8000_0000,
        u32::MAX,
        u32::MAX - 3,
        0x1000_0000,
        len as u32,
        (len as u32).wrapping_sub(1),
        (len as u32).wrapping_sub(4),
        rng.next_u64() as u32,
    ]
}

/// Copies with one header, directory, count or location field set to a hostile value.
pub fn field_smashes(data: &[u8], seed: u64) -> Vec<Variant> {
    let mut rng = XorShift::new(seed);
    let Some(layout) = parse_layout(data) else {
        return Vec::new();
    };
    let mut fields: Vec<(String, usize)> = vec![("nstreams".into(), 8), ("dirrva".into(), 12)];
    for (i, s) in layout.streams.iter().enumerate() {
        fields.push((format!("s{i}type"), s.entry_offset));
        fields.push((format!("s{i}size"), s.entry_offset + 4));
        fields.push((format!("s{i}rva"), s.entry_offset + 8));
        if s.size >= 4 {
            // The first field of most streams is a record count.
            fields.push((format!("s{i}count"), s.rva as usize));
        }
    }
    for (j, (size_off, rva_off)) in location_fields(data, &layout).into_iter().enumerate() {
        fields.push((format!("loc{j}size"), size_off));
        fields.push((format!("loc{j}rva"), rva_off));
    }
    let mut out = Vec::new();
    for (name, off) in fields {
        if off + 4 > data.len() {
            continue;
        }
        for (k, value) in hostile_u32s(data.len(), &mut rng).into_iter().enumerate() {
            out.push(Variant {
                label: format!("{name}_v{k}"),
                edit: Edit::PutU32(vec![(off, value)]),
            });
        }
    }
    out
}

/// How much more than the default to test: `NTDBG_CORRUPT_SCALE=20` for a long fuzzing run
/// (the default, 1, keeps `cargo test` fast).
pub fn scale() -> usize {
    std::env::var("NTDBG_CORRUPT_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1)
}

// ---------------------------------------------------------------------------------------------
// Temp dirs.

/// A unique folder under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `$TMP/ntdbg-<tag>-<pid>-<n>-<nanos>`.
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "ntdbg-{tag}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        TempDir(dir)
    }
    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }
    /// Writes `bytes` to `name` inside the folder.
    pub fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).expect("write temp file");
        path
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------------------------------------
// Panic capture.

/// Turns a `catch_unwind` payload into text.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

thread_local! {
    /// Every panic this thread raised since the last `catch`, as "file:line:col: message",
    /// including panics that the code under test caught itself.
    static PANICS_SEEN: std::cell::RefCell<Vec<String>> =
        const { std::cell::RefCell::new(Vec::new()) };
    /// Whether this thread is inside `catch` (panics are recorded, not printed).
    static IN_CATCH: Cell<bool> = const { Cell::new(false) };
}

/// Installs (once) a panic hook that records every panic raised inside [`catch`], on the
/// panicking thread, and stays quiet about those (the tests report them); other panics (the
/// tests' own assertions) go to the default hook. Set `NTDBG_CORRUPT_VERBOSE=1` to have the
/// default hook print the caught ones too.
pub fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        let verbose = std::env::var_os("NTDBG_CORRUPT_VERBOSE").is_some();
        std::panic::set_hook(Box::new(move |info| {
            let caught = IN_CATCH.try_with(Cell::get).unwrap_or(false);
            if caught {
                let location = info
                    .location()
                    .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
                    .unwrap_or_else(|| "<unknown>".into());
                let seen = format!("{location}: {}", panic_text(info.payload()));
                let _ = PANICS_SEEN.try_with(|c| c.borrow_mut().push(seen));
            }
            if !caught || verbose {
                default(info);
            }
        }));
    });
}

/// Runs `f`, turning a panic into `Err("panicked at file:line:col: message")`.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install_quiet_panic_hook();
    PANICS_SEEN.with(|c| c.borrow_mut().clear());
    let outer = IN_CATCH.with(|c| c.replace(true));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    IN_CATCH.with(|c| c.set(outer));
    result.map_err(|payload| {
        let location = PANICS_SEEN
            .with(|c| c.borrow().last().cloned())
            .and_then(|seen| seen.split(": ").next().map(str::to_string))
            .unwrap_or_else(|| "<unknown>".into());
        format!("panicked at {location}: {}", panic_text(payload.as_ref()))
    })
}

/// The panics raised on this thread during the last `catch`, including those the code under
/// test caught and swallowed itself (`catch_unwind` inside ntdbg).
pub fn panics_seen() -> Vec<String> {
    PANICS_SEEN.with(|c| c.borrow().clone())
}
