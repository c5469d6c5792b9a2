//! Base relocations: moving a mapped image to the address it was really loaded at.

use object::pe as raw;
use object::read::pe::RelocationBlockIterator;

use super::PeInfo;
use crate::FormatError;

/// Applies the image's base relocations to `image` (mapped layout, offset = RVA) so that it
/// reads as it would at `load_base`. Returns how many fix-ups were applied; 0 when the image
/// sits at its preferred base or has no relocation directory.
///
/// `IMAGE_REL_BASED_HIGHLOW` and `IMAGE_REL_BASED_DIR64` (what x86, x64 and ARM64 linkers
/// emit) are applied; `ABSOLUTE` padding is skipped; any other kind fails, since the bytes
/// it covers would otherwise be shown unrelocated.
pub fn apply_base_relocations(
    image: &mut [u8],
    info: &PeInfo,
    load_base: u64,
) -> Result<usize, FormatError> {
    let delta = load_base.wrapping_sub(info.image_base);
    if delta == 0 {
        return Ok(0);
    }
    let Some(dir) = info.data_directory(raw::IMAGE_DIRECTORY_ENTRY_BASERELOC) else {
        return Ok(0);
    };
    let table = info
        .data_at_rva(
            image,
            super::PeLayout::Mapped,
            dir.rva,
            dir.size,
            "base relocation directory",
        )?
        .to_vec();
    let malformed = |reason| FormatError::Malformed {
        what: "base relocation directory",
        offset: u64::from(dir.rva),
        reason,
    };
    let mut applied = 0;
    for block in RelocationBlockIterator::new(&table) {
        let block = block.map_err(|_| malformed("truncated or misaligned block"))?;
        for reloc in block {
            let at = reloc.virtual_address as usize;
            let width = match reloc.typ {
                raw::IMAGE_REL_BASED_ABSOLUTE => continue,
                raw::IMAGE_REL_BASED_HIGHLOW => 4,
                raw::IMAGE_REL_BASED_DIR64 => 8,
                _ => return Err(malformed("unsupported relocation type")),
            };
            let Some(slot) = at.checked_add(width).and_then(|end| image.get_mut(at..end)) else {
                return Err(malformed("relocation outside the image"));
            };
            let mut value = [0u8; 8];
            value[..width].copy_from_slice(slot);
            let moved = u64::from_le_bytes(value).wrapping_add(delta).to_le_bytes();
            // A HIGHLOW slot keeps the low 32 bits: the sum wraps as the loader's does.
            slot.copy_from_slice(&moved[..width]);
            applied += 1;
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pe::{map_file_image, PeLayout};

    #[test]
    fn relocating_and_moving_back_restores_the_image() {
        let Some(dir) = ntdbg_testutil::testdata_dir() else {
            return;
        };
        let file = std::fs::read(dir.join("winelab/x64/crashy.exe")).unwrap();
        let info = PeInfo::parse(&file, PeLayout::File).unwrap();
        let original = map_file_image(&file, &info).unwrap();

        let mut same = original.clone();
        assert_eq!(
            apply_base_relocations(&mut same, &info, info.image_base).unwrap(),
            0
        );
        assert_eq!(same, original);

        let delta = 0x7ff0_0000_0000u64;
        let mut moved = original.clone();
        let applied = apply_base_relocations(&mut moved, &info, info.image_base + delta).unwrap();
        assert!(applied > 0);
        assert_ne!(moved, original);
        // Moving back from the new base restores every byte.
        let mut at_new_base = info.clone();
        at_new_base.image_base += delta;
        let back = apply_base_relocations(&mut moved, &at_new_base, info.image_base).unwrap();
        assert_eq!(back, applied);
        assert_eq!(moved, original);
    }
}
