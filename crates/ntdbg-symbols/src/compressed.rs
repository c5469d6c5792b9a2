//! Compressed symbol files: a store may hold `NAME` as the CAB `NAM_` (the last character
//! replaced by `_`), on a server or in a local folder; both the downloader and the local lookup
//! expand it into the cache. Breakpad files may be `.sym.xz`: [`xz_reader`] decodes them.

use std::io::{Read, Write};
use std::path::Path;

/// Most bytes expanded from one cabinet (as many as one download may bring).
const MAX_EXPANDED: u64 = 4 << 30;

/// Most memory the `.xz` decoder may use (xz's own presets need at most 674 MiB to compress
/// and 65 MiB to decompress); a stream asking for more is an error, not an allocation.
const XZ_MEMORY_LIMIT: u64 = 256 << 20;

/// The decompressed bytes of the `.xz` data `input` (every concatenated stream, as `xz -d`),
/// with bounded decoder memory. The single place the `.xz` decoder (liblzma) is chosen.
pub(crate) fn xz_reader<R: Read>(input: R) -> std::io::Result<impl Read> {
    let stream = liblzma::stream::Stream::new_stream_decoder(
        XZ_MEMORY_LIMIT,
        liblzma::stream::CONCATENATED,
    )?;
    Ok(liblzma::read::XzDecoder::new_stream(input, stream))
}

/// The compressed store name: the last character replaced by `_` (`crashy.pdb` → `crashy.pd_`).
pub(crate) fn compressed_name(name: &str) -> String {
    let mut s = name.to_string();
    s.pop();
    s.push('_');
    s
}

/// Expands the file `name` (or the cabinet's only file) from the CAB at `cab` into `target`.
pub(crate) fn decompress_cab(cab: &Path, name: &str, target: &Path) -> std::io::Result<u64> {
    let file = ntdbg_files::open_regular(cab)?;
    let mut cabinet = cab::Cabinet::new(std::io::BufReader::new(file))?;
    let entries: Vec<String> = cabinet
        .folder_entries()
        .flat_map(|f| {
            f.file_entries()
                .map(|e| e.name().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let inner = entries
        .iter()
        .find(|e| e.eq_ignore_ascii_case(name))
        .or_else(|| entries.first().filter(|_| entries.len() == 1))
        .cloned()
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("the cabinet does not hold {name}"),
            )
        })?;
    let mut reader = cabinet.read_file(&inner)?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temp = target.with_extension("ntdbg-expand");
    let result = std::fs::File::create(&temp).and_then(|mut out| {
        let n = std::io::copy(&mut (&mut reader).take(MAX_EXPANDED), &mut out)?;
        out.flush()?;
        Ok(n)
    });
    match result {
        Ok(n) => std::fs::rename(&temp, target).map(|()| n),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_names_replace_the_last_character() {
        assert_eq!(compressed_name("crashy.pdb"), "crashy.pd_");
    }
}
