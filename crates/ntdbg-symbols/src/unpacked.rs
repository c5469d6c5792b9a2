//! Breakpad `.sym.xz` files decompressed once: the first load streams the `.xz` through the
//! decoder straight into the parser and, on the way, writes the plain text into the symbol
//! cache (`unpacked-sym/` under [`crate::default_cache_dir`]); later loads of the same `.xz`
//! (in this process or the next) parse that copy instead of decompressing again.
//!
//! A copy is named after the `.xz` bytes it came from (their length and CRC-32) and starts
//! with a header holding those and the text's length and CRC-32. It is written to a temporary
//! file and renamed into place, so a reader never sees half a copy. On load the text's
//! checksum is computed while it is parsed: a truncated, damaged or foreign copy is dropped and
//! rebuilt from the `.xz`, never trusted. The folder is bounded: when a new copy would take it
//! past [`MAX_CACHE_BYTES`], the least recently used copies are deleted.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use breakpad_symbols::SymbolFile;

use crate::compressed::xz_reader;

/// The cache subfolder that holds the decompressed copies.
const FOLDER: &str = "unpacked-sym";
/// The first bytes of a copy (format version 1).
const MAGIC: &[u8; 8] = b"NTDBGSY1";
/// The header: magic, the `.xz`'s length and CRC-32, the text's length and CRC-32.
const HEADER_LEN: usize = 8 + 8 + 4 + 8 + 4;
/// Most bytes the folder may hold; older copies are evicted past it.
pub(crate) const MAX_CACHE_BYTES: u64 = 2 << 30;

/// Where the symbols came from (for tests and the debug log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The decompressed copy in the cache.
    CachedCopy,
    /// The `.xz` itself, decompressed now.
    Decompressed,
}

/// The header of a copy.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    xz_len: u64,
    xz_crc: u32,
    text_len: u64,
    text_crc: u32,
}

impl Header {
    fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[..8].copy_from_slice(MAGIC);
        out[8..16].copy_from_slice(&self.xz_len.to_le_bytes());
        out[16..20].copy_from_slice(&self.xz_crc.to_le_bytes());
        out[20..28].copy_from_slice(&self.text_len.to_le_bytes());
        out[28..32].copy_from_slice(&self.text_crc.to_le_bytes());
        out
    }

    fn parse(bytes: &[u8; HEADER_LEN]) -> Option<Header> {
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        (&bytes[..8] == MAGIC).then(|| Header {
            xz_len: u64_at(8),
            xz_crc: u32_at(16),
            text_len: u64_at(20),
            text_crc: u32_at(28),
        })
    }
}

/// The `.xz` bytes' length and CRC-32, and where under `cache` their decompressed copy lives.
fn copy_for(xz: &[u8], cache: Option<&Path>) -> (u64, u32, Option<PathBuf>) {
    let xz_len = xz.len() as u64;
    let xz_crc = crc32fast::hash(xz);
    let copy = cache.map(|c| c.join(FOLDER).join(format!("{xz_crc:08x}-{xz_len:x}.sym")));
    (xz_len, xz_crc, copy)
}

/// What `read` makes of the copy at `copy`, when there is a sound one; a damaged one is
/// deleted (the caller decompresses and writes it again).
fn from_copy<T>(copy: Option<&Path>, read: impl FnOnce(&Path) -> Option<T>) -> Option<T> {
    let copy = copy?;
    let found = read(copy);
    if found.is_none() && copy.exists() {
        tracing::debug!(copy = %copy.display(), "damaged decompressed copy dropped");
        let _ = std::fs::remove_file(copy);
    }
    found
}

/// The copy at `path` opened after its header, when the header says it was made from this
/// `.xz` and its text is at most `max_text` bytes.
fn open_copy(path: &Path, xz_len: u64, xz_crc: u32, max_text: u64) -> Option<(File, Header)> {
    let mut file = ntdbg_files::open_regular(path).ok()?;
    let mut head = [0u8; HEADER_LEN];
    file.read_exact(&mut head).ok()?;
    let header = Header::parse(&head)?;
    if header.xz_len != xz_len || header.xz_crc != xz_crc || header.text_len > max_text {
        return None;
    }
    Some((file, header))
}

/// Parses the Breakpad symbols in the `.xz` bytes `xz`, at most `max_text` bytes of text:
/// from the decompressed copy under `cache` when a sound one is there, else by decompressing
/// (and then keeping a copy there, when `cache` is given and writable). Errors are messages
/// for the caller to attach to the file's path.
pub(crate) fn parse_xz(
    xz: &[u8],
    cache: Option<&Path>,
    max_text: u64,
) -> Result<(SymbolFile, Source), String> {
    let (xz_len, xz_crc, copy) = copy_for(xz, cache);
    if let Some(sym) = from_copy(copy.as_deref(), |c| read_copy(c, xz_len, xz_crc, max_text)) {
        return Ok((sym, Source::CachedCopy));
    }
    let sym = decompress(xz, xz_len, xz_crc, copy.as_deref(), max_text)?;
    Ok((sym, Source::Decompressed))
}

/// The Breakpad text in the `.xz` bytes `xz`, at most `max_text` bytes: from the decompressed
/// copy under `cache` when a sound one is there, else decompressed now (and then kept there,
/// when `cache` is given and writable). Errors are messages for the caller to attach to the
/// file's path.
pub(crate) fn text_of_xz(
    xz: &[u8],
    cache: Option<&Path>,
    max_text: u64,
) -> Result<(Vec<u8>, Source), String> {
    let (xz_len, xz_crc, copy) = copy_for(xz, cache);
    let cached = from_copy(copy.as_deref(), |c| {
        read_copy_text(c, xz_len, xz_crc, max_text)
    });
    if let Some(text) = cached {
        return Ok((text, Source::CachedCopy));
    }
    let mut text = Vec::new();
    xz_reader(xz)
        .map_err(|e| format!("xz: {e}"))?
        .take(max_text + 1)
        .read_to_end(&mut text)
        .map_err(|e| format!("xz: {e}"))?;
    if text.len() as u64 > max_text {
        return Err("decompressed file too large".to_string());
    }
    if let Some(copy) = &copy {
        if let Some(mut w) = CopyWriter::create(copy) {
            w.write(&text);
            let header = Header {
                xz_len,
                xz_crc,
                text_len: text.len() as u64,
                text_crc: crc32fast::hash(&text),
            };
            w.finish(&header, copy);
        }
    }
    Ok((text, Source::Decompressed))
}

/// The text of the copy at `path`, if it is there, was made from this `.xz` and is whole
/// (length and checksum).
fn read_copy_text(path: &Path, xz_len: u64, xz_crc: u32, max_text: u64) -> Option<Vec<u8>> {
    let (mut file, header) = open_copy(path, xz_len, xz_crc, max_text)?;
    let mut text = Vec::with_capacity(usize::try_from(header.text_len).ok()?);
    (&mut file)
        .take(header.text_len + 1)
        .read_to_end(&mut text)
        .ok()?;
    if text.len() as u64 != header.text_len || crc32fast::hash(&text) != header.text_crc {
        return None;
    }
    // The modification time marks the copy as recently used, for eviction.
    let _ = file.set_modified(SystemTime::now());
    Some(text)
}

/// The symbols from the copy at `path`, if it is there, was made from this `.xz` and its text
/// is whole (length and checksum) — checked while parsing, so the text is read once.
fn read_copy(path: &Path, xz_len: u64, xz_crc: u32, max_text: u64) -> Option<SymbolFile> {
    let (mut file, header) = open_copy(path, xz_len, xz_crc, max_text)?;
    let mut crc = crc32fast::Hasher::new();
    let mut seen = 0u64;
    let sym = SymbolFile::parse((&mut file).take(header.text_len), |chunk| {
        crc.update(chunk);
        seen += chunk.len() as u64;
    })
    .ok()?;
    let mut rest = [0u8; 1];
    let at_end = matches!(file.read(&mut rest), Ok(0));
    if seen != header.text_len || crc.finalize() != header.text_crc || !at_end {
        return None;
    }
    // The modification time marks the copy as recently used, for eviction.
    let _ = file.set_modified(SystemTime::now());
    Some(sym)
}

/// A reader that counts the bytes and keeps the first error of the reader it wraps (the
/// parser reports read errors without their cause, and may stop before the end).
struct Watched<R> {
    inner: R,
    read: u64,
    error: Option<std::io::Error>,
}

impl<R: Read> Read for Watched<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let result = self.inner.read(buf);
        match &result {
            Ok(n) => self.read += *n as u64,
            Err(e) if self.error.is_none() => {
                self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
            }
            Err(_) => {}
        }
        result
    }
}

/// Decompresses and parses in one pass; the text also goes to a new copy at `copy`.
fn decompress(
    xz: &[u8],
    xz_len: u64,
    xz_crc: u32,
    copy: Option<&Path>,
    max_text: u64,
) -> Result<SymbolFile, String> {
    let mut writer = copy.and_then(CopyWriter::create);
    let mut crc = crc32fast::Hasher::new();
    let mut seen = 0u64;
    let mut reader = Watched {
        inner: xz_reader(xz)
            .map_err(|e| format!("xz: {e}"))?
            .take(max_text + 1),
        read: 0,
        error: None,
    };
    let parsed = SymbolFile::parse(&mut reader, |chunk| {
        crc.update(chunk);
        seen += chunk.len() as u64;
        if let Some(w) = writer.as_mut() {
            w.write(chunk);
        }
    });
    if let Some(e) = reader.error {
        return Err(format!("xz: {e}"));
    }
    if reader.read > max_text {
        return Err("decompressed file too large".to_string());
    }
    let sym = parsed.map_err(|e| e.to_string())?;
    // (The parser passes every byte it read to the callback; a copy is kept only if so.)
    if let (Some(w), Some(copy), true) = (writer, copy, seen == reader.read) {
        let header = Header {
            xz_len,
            xz_crc,
            text_len: seen,
            text_crc: crc.finalize(),
        };
        w.finish(&header, copy);
    }
    Ok(sym)
}

/// Temporary-file names are unique within the process by this counter (and across processes
/// by the process id).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A copy being written: a temporary file beside its final place, renamed when complete.
/// Failing to write only means no copy: the symbols themselves are not affected.
struct CopyWriter {
    temp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl CopyWriter {
    fn create(copy: &Path) -> Option<CopyWriter> {
        let dir = copy.parent()?;
        std::fs::create_dir_all(dir).ok()?;
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let mut out = BufWriter::new(File::create(&temp).ok()?);
        let mut writer = CopyWriter { temp, out: None };
        // A placeholder header (no magic) until the text's length and checksum are known.
        out.write_all(&[0u8; HEADER_LEN]).ok()?;
        writer.out = Some(out);
        Some(writer)
    }

    fn write(&mut self, chunk: &[u8]) {
        if let Some(out) = &mut self.out {
            if out.write_all(chunk).is_err() {
                self.out = None;
            }
        }
    }

    /// Writes the header and moves the copy into place; then keeps the folder under its cap.
    fn finish(mut self, header: &Header, copy: &Path) {
        let Some(out) = self.out.take() else {
            return;
        };
        let done = out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|mut file| {
                file.seek(SeekFrom::Start(0))?;
                file.write_all(&header.to_bytes())?;
                file.flush()
            })
            .and_then(|()| std::fs::rename(&self.temp, copy));
        match done {
            Ok(()) => {
                if let Some(dir) = copy.parent() {
                    evict(dir, MAX_CACHE_BYTES);
                }
            }
            Err(e) => tracing::debug!(copy = %copy.display(), "decompressed copy not kept: {e}"),
        }
    }
}

impl Drop for CopyWriter {
    fn drop(&mut self) {
        // Still there unless renamed: an unfinished or failed copy.
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// A temporary file (`.tmp-PID-N`) older than this was left by a writer that died mid-write,
/// or is a discarded index that could not be deleted then (still mapped, on Windows).
const STALE_TEMP: std::time::Duration = std::time::Duration::from_secs(3600);

/// Deletes the least recently used files of `dir` until it holds at most `cap` bytes, and the
/// temporary files writers that died left behind ([`STALE_TEMP`]); a temporary file being
/// written now is left alone.
pub(crate) fn evict(dir: &Path, cap: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    let mut files: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
    for entry in entries.flatten() {
        let Some(meta) = entry.metadata().ok().filter(|m| m.is_file()) else {
            continue;
        };
        let Ok(modified) = meta.modified() else {
            continue;
        };
        if entry.file_name().to_string_lossy().starts_with(".tmp-") {
            if now
                .duration_since(modified)
                .is_ok_and(|age| age > STALE_TEMP)
            {
                let _ = std::fs::remove_file(entry.path());
            }
            continue;
        }
        files.push((modified, meta.len(), entry.path()));
    }
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    files.sort();
    for (_, len, path) in files {
        if total <= cap {
            break;
        }
        if std::fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "MODULE windows x86_64 0123456789ABCDEF0123456789ABCDEF1 t.pdb\n\
                        FUNC 1000 10 0 f\n1000 10 7 1\nPUBLIC 2000 0 g\n";

    fn xz(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        liblzma::read::XzEncoder::new(text, 6)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ntdbg-unpacked-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn the_copy(cache: &Path) -> PathBuf {
        let mut files: Vec<PathBuf> = std::fs::read_dir(cache.join(FOLDER))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files.pop().unwrap()
    }

    #[test]
    fn the_second_load_reads_the_copy_and_a_damaged_copy_is_rebuilt() {
        let cache = scratch("reuse");
        let packed = xz(TEXT.as_bytes());
        let (first, how) = parse_xz(&packed, Some(&cache), 1 << 20).unwrap();
        assert_eq!(how, Source::Decompressed);
        let copy = the_copy(&cache);
        let (second, how) = parse_xz(&packed, Some(&cache), 1 << 20).unwrap();
        assert_eq!(how, Source::CachedCopy);
        assert_eq!(first.publics.len(), second.publics.len());
        assert_eq!(second.module_id, "0123456789ABCDEF0123456789ABCDEF1");
        let good = std::fs::read(&copy).unwrap();
        assert_eq!(&good[HEADER_LEN..], TEXT.as_bytes());

        // One flipped byte, a truncation, a missing header, trailing bytes: each is rebuilt.
        let mut flipped = good.clone();
        flipped[HEADER_LEN + 20] ^= 0x20;
        let mut longer = good.clone();
        longer.extend_from_slice(b"FUNC 3000 1 0 h\n");
        for damaged in [
            flipped,
            good[..good.len() - 5].to_vec(),
            good[..10].to_vec(),
            longer,
        ] {
            std::fs::write(&copy, &damaged).unwrap();
            let (sym, how) = parse_xz(&packed, Some(&cache), 1 << 20).unwrap();
            assert_eq!(how, Source::Decompressed);
            assert_eq!(sym.publics.len(), first.publics.len());
            assert_eq!(std::fs::read(&copy).unwrap(), good);
        }
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn the_text_is_kept_once_and_read_back_the_same_way_as_for_the_parser() {
        let cache = scratch("text");
        let packed = xz(TEXT.as_bytes());
        let (first, how) = text_of_xz(&packed, Some(&cache), 1 << 20).unwrap();
        assert_eq!(
            (first.as_slice(), how),
            (TEXT.as_bytes(), Source::Decompressed)
        );
        let copy = the_copy(&cache);
        let good = std::fs::read(&copy).unwrap();
        // The copy serves the streaming parser too, and it serves this reader.
        assert_eq!(
            parse_xz(&packed, Some(&cache), 1 << 20).unwrap().1,
            Source::CachedCopy
        );
        let (second, how) = text_of_xz(&packed, Some(&cache), 1 << 20).unwrap();
        assert_eq!((second, how), (first.clone(), Source::CachedCopy));
        let mut flipped = good.clone();
        flipped[HEADER_LEN + 20] ^= 0x20;
        let mut longer = good.clone();
        longer.push(b'\n');
        for damaged in [
            flipped,
            good[..good.len() - 5].to_vec(),
            good[..10].to_vec(),
            longer,
        ] {
            std::fs::write(&copy, &damaged).unwrap();
            let (text, how) = text_of_xz(&packed, Some(&cache), 1 << 20).unwrap();
            assert_eq!((text, how), (first.clone(), Source::Decompressed));
            assert_eq!(std::fs::read(&copy).unwrap(), good);
        }
        assert!(
            text_of_xz(&packed, Some(&cache), 16).is_err(),
            "over the size limit"
        );
        assert!(text_of_xz(&packed[..packed.len() / 2], None, 1 << 20).is_err());
        std::fs::remove_dir_all(&cache).unwrap();
    }

    #[test]
    fn damaged_xz_input_is_an_error_and_leaves_no_copy() {
        let cache = scratch("damaged");
        let packed = xz(TEXT.as_bytes());
        let mut flipped = packed.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0xff;
        let inputs = [
            &packed[..packed.len() / 2],
            &packed[..packed.len() - 1],
            &flipped[..],
            b"not xz at all".as_slice(),
            &[][..],
        ];
        for input in inputs {
            let e = parse_xz(input, Some(&cache), 1 << 20).unwrap_err();
            assert!(e.starts_with("xz: "), "{e}");
        }
        let left = std::fs::read_dir(cache.join(FOLDER)).map_or(0, |d| d.count());
        assert_eq!(left, 0);
        let e = parse_xz(&packed, Some(&cache), 16).unwrap_err();
        assert_eq!(e, "decompressed file too large");
        let _ = std::fs::remove_dir_all(&cache);
    }

    #[test]
    fn without_a_cache_the_xz_is_decompressed_every_time() {
        let packed = xz(TEXT.as_bytes());
        for _ in 0..2 {
            let (_, how) = parse_xz(&packed, None, 1 << 20).unwrap();
            assert_eq!(how, Source::Decompressed);
        }
    }

    #[test]
    fn eviction_deletes_the_least_recently_used_first() {
        let dir = scratch("evict");
        std::fs::create_dir_all(&dir).unwrap();
        let now = SystemTime::now();
        for (i, name) in ["old", "mid", "new"].iter().enumerate() {
            let path = dir.join(name);
            std::fs::write(&path, [0u8; 100]).unwrap();
            let file = File::options().write(true).open(&path).unwrap();
            file.set_modified(now - std::time::Duration::from_secs(100 - i as u64 * 10))
                .unwrap();
        }
        evict(&dir, 200);
        assert!(!dir.join("old").exists());
        assert!(dir.join("mid").exists() && dir.join("new").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn eviction_deletes_what_dead_writers_left_and_not_a_write_in_progress() {
        let dir = scratch("temps");
        std::fs::create_dir_all(&dir).unwrap();
        let (dead, live) = (dir.join(".tmp-1-0"), dir.join(".tmp-2-0"));
        for path in [&dead, &live] {
            std::fs::write(path, [0u8; 100]).unwrap();
        }
        File::options()
            .write(true)
            .open(&dead)
            .unwrap()
            .set_modified(SystemTime::now() - STALE_TEMP * 2)
            .unwrap();
        // Under the cap: only the dead writer's file goes; a tight cap spares the live one.
        evict(&dir, 1 << 20);
        assert!(!dead.exists() && live.exists());
        evict(&dir, 0);
        assert!(live.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
