//! The memory map of a process behind a GDB stub, where the stub gives one: winedbg's
//! `monitor mem` (its `VirtualQueryEx` walk: state, type and allocation protection) or
//! `/proc/PID/maps` read through gdbserver's host I/O. Either becomes the MemoryInfoList a
//! minidump would hold, so `!address` and `.dump /ma` see the live process's regions.

use ntdbg_gdbremote::GdbClient;

use crate::model::MemoryInfo;

use crate::model::memory_flags::{
    MEM_COMMIT, MEM_FREE, MEM_IMAGE, MEM_MAPPED, MEM_PRIVATE, MEM_RESERVE,
};
/// Most bytes of `/proc/PID/maps` read.
const MAX_MAPS: usize = 4 << 20;

/// The regions and where they came from, for people.
pub(crate) fn read(
    client: &mut GdbClient,
    pid: Option<u64>,
) -> Option<(Vec<MemoryInfo>, &'static str)> {
    if let Ok(Some(text)) = client.monitor("mem") {
        let regions = parse_wine_mem(&text);
        if !regions.is_empty() {
            return Some((regions, "winedbg's memory map (monitor mem)"));
        }
    }
    let maps = client
        .read_host_file(&format!("/proc/{}/maps", pid?), MAX_MAPS)
        .ok()??;
    let regions = parse_proc_maps(&String::from_utf8_lossy(&maps));
    (!regions.is_empty()).then_some((regions, "/proc/PID/maps read through the stub"))
}

/// `PAGE_*` protection of `r`, `w`, `x` (`PAGE_NOACCESS` for none).
fn protection(read: bool, write: bool, execute: bool) -> u32 {
    match (read || write, write, execute) {
        (_, true, true) => 0x40,
        (true, false, true) => 0x20,
        (false, false, true) => 0x10,
        (_, true, false) => 0x04,
        (true, false, false) => 0x02,
        (false, false, false) => 0x01,
    }
}

/// winedbg's `monitor mem` lines: `ADDRESS SIZE STATE TYPE RWX` (the protection is the
/// allocation's).
fn parse_wine_mem(text: &str) -> Vec<MemoryInfo> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let base = u64::from_str_radix(words.next()?, 16).ok()?;
            let size = u64::from_str_radix(words.next()?, 16).ok()?;
            let state = match words.next()? {
                "commit" => MEM_COMMIT,
                "reserve" => MEM_RESERVE,
                "free" => MEM_FREE,
                _ => return None,
            };
            let rest: Vec<&str> = words.collect();
            let kind = match rest.first().copied() {
                Some("image") => MEM_IMAGE,
                Some("mapped") => MEM_MAPPED,
                Some("private") => MEM_PRIVATE,
                _ => 0,
            };
            let rwx = rest
                .iter()
                .find(|w| w.chars().all(|c| "RWCX".contains(c)))
                .copied()
                .unwrap_or("");
            let protect = if state == MEM_COMMIT {
                protection(
                    rwx.contains('R'),
                    rwx.contains('W') || rwx.contains('C'),
                    rwx.contains('X'),
                )
            } else {
                0
            };
            Some(MemoryInfo {
                base,
                allocation_base: base,
                allocation_protect: protect,
                size,
                state,
                protect,
                kind: if state == MEM_FREE { 0 } else { kind },
            })
        })
        .collect()
}

/// `/proc/PID/maps` lines: `START-END rwxp OFFSET DEV INODE [PATH]`.
fn parse_proc_maps(text: &str) -> Vec<MemoryInfo> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (start, end) = words.next()?.split_once('-')?;
            let perms = words.next()?.as_bytes();
            let (base, end) = (
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
            );
            let inode = words.nth(2).unwrap_or("0");
            let path = words.next().unwrap_or("");
            // [vvar] and [vsyscall] cannot be read through ptrace: left out.
            if path == "[vvar]" || path == "[vsyscall]" || end <= base {
                return None;
            }
            let protect = protection(
                perms.first() == Some(&b'r'),
                perms.get(1) == Some(&b'w'),
                perms.get(2) == Some(&b'x'),
            );
            Some(MemoryInfo {
                base,
                allocation_base: base,
                allocation_protect: protect,
                size: end - base,
                state: MEM_COMMIT,
                protect,
                kind: if inode != "0" {
                    MEM_MAPPED
                } else {
                    MEM_PRIVATE
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_maps_of_winedbg_and_linux() {
        let wine = "Address  Size     State   Type    RWX\n\
                    0000000000010000 0000000000010000 commit  mapped  RW \n\
                    0000000000020000 0000000000001000 reserve private    \n\
                    0000000000021000 00000000000df000 free    \n\
                    0000000140000000 0000000000001000 commit  image   R  \n";
        let regions = parse_wine_mem(wine);
        let facts: Vec<(u64, u64, u32, u32, u32)> = regions
            .iter()
            .map(|r| (r.base, r.size, r.state, r.protect, r.kind))
            .collect();
        assert_eq!(
            facts,
            vec![
                (0x10000, 0x10000, MEM_COMMIT, 0x04, MEM_MAPPED),
                (0x20000, 0x1000, MEM_RESERVE, 0, MEM_PRIVATE),
                (0x21000, 0xdf000, MEM_FREE, 0, 0),
                (0x1_4000_0000, 0x1000, MEM_COMMIT, 0x02, MEM_IMAGE),
            ]
        );
        let linux = "00400000-00401000 r--p 00000000 08:01 12 /x\n\
                     00401000-00402000 r-xp 00001000 08:01 12 /x\n\
                     7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0 [vvar]\n\
                     7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n\
                     ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
        let facts: Vec<(u64, u32, u32)> = parse_proc_maps(linux)
            .iter()
            .map(|r| (r.base, r.protect, r.kind))
            .collect();
        assert_eq!(
            facts,
            vec![
                (0x40_0000, 0x02, MEM_MAPPED),
                (0x40_1000, 0x20, MEM_MAPPED),
                (0x7fff_fffd_e000, 0x04, MEM_PRIVATE)
            ]
        );
    }
}
