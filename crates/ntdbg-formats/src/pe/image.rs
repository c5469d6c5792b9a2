//! Laying a file image out as the loader would map it.

use super::PeInfo;
use crate::FormatError;

/// Largest `SizeOfImage` [`map_file_image`] accepts (a corrupt header must not make it
/// allocate gigabytes).
pub const MAX_MAPPED_IMAGE_SIZE: u32 = 512 * 1024 * 1024;

/// Lays out a file-layout image (`file`, parsed as `info`) as mapped memory: headers at 0 and
/// every section's raw data at its RVA. Bytes the file does not provide (uninitialised data,
/// gaps between sections) are zero, as the loader makes them.
pub fn map_file_image(file: &[u8], info: &PeInfo) -> Result<Vec<u8>, FormatError> {
    if info.size_of_image > MAX_MAPPED_IMAGE_SIZE {
        return Err(FormatError::Unsupported {
            what: "SizeOfImage (too large to map)",
            value: u64::from(info.size_of_image),
        });
    }
    let size = info.size_of_image as usize;
    let mut image = vec![0u8; size];
    let headers = (info.size_of_headers as usize).min(size).min(file.len());
    image[..headers].copy_from_slice(&file[..headers]);
    for section in &info.sections {
        let len = section.size_of_raw_data.min(section.mapped_size()) as usize;
        let src_start = section.pointer_to_raw_data as usize;
        let dst_start = section.virtual_address as usize;
        // Clip to both buffers: a section that claims more than the file holds keeps what exists.
        let len = len
            .min(file.len().saturating_sub(src_start))
            .min(size.saturating_sub(dst_start));
        if len == 0 {
            continue;
        }
        image[dst_start..dst_start + len].copy_from_slice(&file[src_start..src_start + len]);
    }
    Ok(image)
}
