//! PDB addresses → image RVAs, including OMAP.
//!
//! Images rewritten after linking (Microsoft's BBT-optimised system binaries, and Breakpad's
//! `omap_*` test PDBs) keep their PDB in the layout before the rewrite, plus an OMAP table
//! from old to new RVAs. A contiguous range in the PDB can then land in several pieces of the
//! image, so ranges are translated piece by piece. pdb2 translates single addresses only, and
//! only when the original section headers are present; this module reads the DBI stream's
//! debug header itself and handles both cases.

use pdb_addr2line::pdb::{self, AddressMap, PdbInternalSectionOffset, Source, PDB};

/// The DBI stream.
const DBI_STREAM: u16 = 3;
/// Size of the DBI stream header.
const DBI_HEADER_LEN: usize = 64;
/// Indices in the DBI optional debug header.
const DBG_FPO: usize = 0;
const DBG_OMAP_FROM_SRC: usize = 4;
const DBG_SECTION_HEADERS: usize = 5;
const DBG_ORIGINAL_SECTION_HEADERS: usize = 10;

/// Offsets in the DBI header of the sizes of the substreams before the optional debug header:
/// module info, section contributions, section map, file info, type server map, EC.
const SUBSTREAM_SIZES: [usize; 6] = [24, 28, 32, 36, 40, 52];

/// The stream numbers of the DBI optional debug header (`0xffff` = absent).
///
/// # Errors
/// Substream sizes whose sum overflows a `u32`: pdb2 adds them that way to find the header
/// and would panic (with overflow checks) or read the wrong bytes (without).
pub(crate) fn dbi_debug_streams<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
) -> Result<Vec<u16>, pdb::Error> {
    let Ok(Some(dbi)) = pdb.raw_stream(pdb::StreamIndex(DBI_STREAM)) else {
        return Ok(Vec::new());
    };
    let d = dbi.as_slice();
    let u32_at = |at: usize| -> Option<u32> {
        let b = d.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let Some(sizes) = SUBSTREAM_SIZES
        .into_iter()
        .map(u32_at)
        .collect::<Option<Vec<u32>>>()
    else {
        return Ok(Vec::new());
    };
    let Some(total) = sizes.iter().try_fold(0u32, |acc, &n| acc.checked_add(n)) else {
        return Err(pdb::Error::InvalidStreamLength("DBI substream sizes"));
    };
    // The sizes are signed: a negative one leaves nothing to read.
    if sizes.iter().any(|&n| i32::try_from(n).is_err()) {
        return Ok(Vec::new());
    }
    let i32_at = |at: usize| -> Option<usize> { usize::try_from(u32_at(at)? as i32).ok() };
    let Ok(skip) = usize::try_from(total) else {
        return Ok(Vec::new());
    };
    let (Some(at), Some(size)) = (DBI_HEADER_LEN.checked_add(skip), i32_at(48)) else {
        return Ok(Vec::new());
    };
    let Some(header) = at.checked_add(size).and_then(|end| d.get(at..end)) else {
        return Ok(Vec::new());
    };
    Ok(header
        .chunks_exact(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect())
}

/// The raw bytes of debug-header stream `which`, if present.
pub(crate) fn debug_stream<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
    streams: &[u16],
    which: usize,
) -> Option<Vec<u8>> {
    let index = *streams.get(which)?;
    if index == 0xffff {
        return None;
    }
    let stream = pdb.raw_stream(pdb::StreamIndex(index)).ok()??;
    Some(stream.as_slice().to_vec())
}

/// The FPO stream's bytes.
pub(crate) fn fpo_stream<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
    streams: &[u16],
) -> Option<Vec<u8>> {
    debug_stream(pdb, streams, DBG_FPO)
}

/// OMAP: section VAs of the pre-rewrite layout and the old → new RVA table.
#[derive(Debug)]
struct Omap {
    section_vas: Vec<u32>,
    /// (old RVA, new RVA) sorted by old; new 0 = eliminated.
    entries: Vec<(u32, u32)>,
    /// New-layout ranges that some old code maps to, sorted by start.
    targets: Vec<(u32, u32)>,
}

impl Omap {
    fn internal_rva(&self, off: PdbInternalSectionOffset) -> Option<u32> {
        let va = *self
            .section_vas
            .get(usize::from(off.section).checked_sub(1)?)?;
        va.checked_add(off.offset)
    }

    fn lookup(&self, rva: u32) -> Option<u32> {
        let i = self
            .entries
            .partition_point(|e| e.0 <= rva)
            .checked_sub(1)?;
        let (src, dst) = self.entries[i];
        if dst == 0 {
            return None;
        }
        dst.checked_add(rva - src)
    }

    /// Whether any old code maps into `[start, end)` of the new layout.
    fn is_target(&self, start: u32, end: u32) -> bool {
        if start >= end {
            return false;
        }
        let i = self.targets.partition_point(|t| t.0 < end);
        self.targets[..i].iter().rev().take(64).any(|t| t.1 > start)
    }

    fn new(section_vas: Vec<u32>, mut entries: Vec<(u32, u32)>) -> Omap {
        entries.sort_by_key(|e| e.0);
        let mut targets: Vec<(u32, u32)> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.1 != 0)
            .map(|(i, &(src, dst))| {
                let len = entries.get(i + 1).map_or(1, |n| n.0.saturating_sub(src));
                (dst, dst.saturating_add(len))
            })
            .collect();
        targets.sort_unstable();
        Omap {
            section_vas,
            entries,
            targets,
        }
    }

    fn ranges(&self, start: u32, end: u32) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        let first = self
            .entries
            .partition_point(|e| e.0 <= start)
            .saturating_sub(1);
        for (i, &(src, dst)) in self.entries.iter().enumerate().skip(first) {
            if src >= end {
                break;
            }
            let next = self.entries.get(i + 1).map_or(end, |e| e.0);
            let (s, e) = (start.max(src), end.min(next));
            if s >= e || dst == 0 || src > s {
                continue;
            }
            let (Some(a), Some(b)) = (dst.checked_add(s - src), dst.checked_add(e - src)) else {
                continue;
            };
            let piece = (a, b);
            // Pieces separated only by bytes nothing maps to (padding the rewrite inserted)
            // are one range, as dump_syms counts them.
            match out.last_mut() {
                Some(last) if last.1 <= piece.0 && !self.is_target(last.1, piece.0) => {
                    last.1 = piece.1
                }
                _ => out.push(piece),
            }
        }
        out
    }
}

/// Translates PDB addresses to RVAs of the image.
pub(crate) struct Addresses<'s> {
    map: AddressMap<'s>,
    omap: Option<Omap>,
}

fn section_vas(headers: &[u8]) -> Vec<u32> {
    headers
        .chunks_exact(40)
        .map(|h| u32::from_le_bytes([h[12], h[13], h[14], h[15]]))
        .collect()
}

impl<'s> Addresses<'s> {
    /// Reads the section headers and OMAP tables.
    pub fn read<S: Source<'s> + 's>(
        pdb: &mut PDB<'s, S>,
        streams: &[u16],
    ) -> Result<Addresses<'s>, pdb::Error> {
        let omap = debug_stream(pdb, streams, DBG_OMAP_FROM_SRC).and_then(|table| {
            let headers = debug_stream(pdb, streams, DBG_ORIGINAL_SECTION_HEADERS)
                .or_else(|| debug_stream(pdb, streams, DBG_SECTION_HEADERS))?;
            let entries: Vec<(u32, u32)> = table
                .chunks_exact(8)
                .map(|e| {
                    (
                        u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                        u32::from_le_bytes([e[4], e[5], e[6], e[7]]),
                    )
                })
                .collect();
            (!entries.is_empty()).then(|| Omap::new(section_vas(&headers), entries))
        });
        // Without OMAP pdb2's map is exact; with it, pdb2 may refuse (no original headers).
        let map = match pdb.address_map() {
            Ok(map) => map,
            Err(_) if omap.is_some() => AddressMap::default(),
            Err(e) => return Err(e),
        };
        Ok(Addresses { map, omap })
    }

    /// The RVA of a section offset (`None`: eliminated by the rewrite, or out of range).
    pub fn rva(&self, off: PdbInternalSectionOffset) -> Option<u32> {
        match &self.omap {
            Some(o) => o.lookup(o.internal_rva(off)?),
            None => off.to_rva(&self.map).map(|r| r.0),
        }
    }

    /// The RVA of a PDB-internal RVA (frame data, FPO).
    pub fn rva_of_internal(&self, rva: u32) -> Option<u32> {
        match &self.omap {
            Some(o) => o.lookup(rva),
            None => pdb::PdbInternalRva(rva).to_rva(&self.map).map(|r| r.0),
        }
    }

    /// The image ranges `[start, end)` that `len` bytes at PDB-internal RVA `rva` became.
    pub fn ranges_of_internal(&self, rva: u32, len: u32) -> Vec<(u32, u32)> {
        match &self.omap {
            Some(o) => o.ranges(rva, rva.saturating_add(len)),
            None => match self.rva_of_internal(rva) {
                Some(s) if len > 0 => vec![(s, s.saturating_add(len))],
                _ => Vec::new(),
            },
        }
    }

    /// The image ranges `[start, end)` that `len` bytes at `off` became, in PDB order.
    pub fn ranges(&self, off: PdbInternalSectionOffset, len: u32) -> Vec<(u32, u32)> {
        match &self.omap {
            Some(o) => match o.internal_rva(off) {
                Some(start) => o.ranges(start, start.saturating_add(len)),
                None => Vec::new(),
            },
            None => match self.rva(off) {
                Some(s) if len > 0 => vec![(s, s.saturating_add(len))],
                _ => Vec::new(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn omap_ranges_split_and_skip_eliminated_code() {
        let o = Omap::new(
            vec![0x1000],
            vec![
                (0x1000, 0x5000),
                (0x1010, 0x2000),
                (0x1020, 0),
                (0x1030, 0x1030),
            ],
        );
        assert_eq!(o.lookup(0x1004), Some(0x5004));
        assert_eq!(o.lookup(0x1024), None);
        assert_eq!(o.lookup(0x0fff), None);
        assert_eq!(
            o.ranges(0x1008, 0x1038),
            vec![(0x5008, 0x5010), (0x2000, 0x2010), (0x1030, 0x1038)]
        );
        // Padding between two pieces that nothing maps to joins them.
        let stretched = Omap::new(vec![0x1000], vec![(0x1000, 0x1000), (0x1008, 0x1010)]);
        assert_eq!(stretched.ranges(0x1000, 0x1010), vec![(0x1000, 0x1018)]);
        assert_eq!(
            o.internal_rva(PdbInternalSectionOffset {
                section: 1,
                offset: 8
            }),
            Some(0x1008)
        );
        assert_eq!(
            o.internal_rva(PdbInternalSectionOffset {
                section: 2,
                offset: 8
            }),
            None
        );
    }
}
