//! Process facts some dumps record beside threads and modules: open handles (HandleData
//! stream), per-thread times (ThreadInfoList) and modules unloaded before the dump was written
//! (UnloadedModuleList). Each is read once when the dump is opened; a dump without the stream
//! simply has none of them.

use minidump::{
    MinidumpHandleDataStream, MinidumpThreadInfoList, MinidumpUnloadedModuleList,
    RawHandleDescriptor,
};

/// Most entries kept from one stream (hostile dumps can claim millions).
const MAX_ENTRIES: usize = 1 << 16;

/// One open handle of the process (a MINIDUMP_HANDLE_DESCRIPTOR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandleInfo {
    /// The handle value.
    pub handle: u64,
    /// The object type name (`Event`, `File`, …), when the dump records it.
    pub type_name: Option<String>,
    /// The object name (`\Device\HarddiskVolume3\…`), when the dump records it.
    pub object_name: Option<String>,
    /// Handle attributes (`OBJ_INHERIT` 2, `OBJ_PERMANENT` 0x10, …).
    pub attributes: u32,
    /// The access mask granted to the handle.
    pub granted_access: u32,
    /// Handle references to the object.
    pub handle_count: u32,
    /// Pointer references to the object.
    pub pointer_count: u32,
    /// How many object-specific information records the dump holds for the handle.
    pub object_info_records: usize,
}

/// One thread's times and state (a MINIDUMP_THREAD_INFO).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadTimes {
    /// The OS thread id.
    pub thread_id: u32,
    /// `MINIDUMP_THREAD_INFO` dump flags (1 error, 2 writing, 4 exited, …).
    pub dump_flags: u32,
    /// The thread's exit status (`STILL_ACTIVE` 0x103 while it runs).
    pub exit_status: u32,
    /// Creation time, a FILETIME (100 ns since 1601), 0 when unknown.
    pub create_time: u64,
    /// Exit time, a FILETIME, 0 while the thread runs.
    pub exit_time: u64,
    /// Time spent in kernel mode, in 100 ns units.
    pub kernel_time: u64,
    /// Time spent in user mode, in 100 ns units.
    pub user_time: u64,
    /// The thread's start address.
    pub start_address: u64,
    /// The processor affinity mask.
    pub affinity: u64,
}

/// A module the process unloaded before the dump was written (a MINIDUMP_UNLOADED_MODULE).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnloadedModule {
    /// Where it was loaded.
    pub base: u64,
    /// Its size in memory.
    pub size: u32,
    /// PE checksum.
    pub checksum: u32,
    /// PE TimeDateStamp.
    pub time_date_stamp: u32,
    /// The file name as the process recorded it.
    pub name: String,
}

impl UnloadedModule {
    /// One past its last byte (saturating).
    pub fn end(&self) -> u64 {
        self.base.saturating_add(u64::from(self.size))
    }
}

/// The HandleData stream as [`HandleInfo`]s, in stream order.
pub(crate) fn handles_from(stream: &MinidumpHandleDataStream) -> Vec<HandleInfo> {
    stream
        .handles
        .iter()
        .take(MAX_ENTRIES)
        .map(|h| {
            let (handle, attributes, granted_access, handle_count, pointer_count) = match &h.raw {
                RawHandleDescriptor::HandleDescriptor(d) => (
                    d.handle,
                    d.attributes,
                    d.granted_access,
                    d.handle_count,
                    d.pointer_count,
                ),
                RawHandleDescriptor::HandleDescriptor2(d) => (
                    d.handle,
                    d.attributes,
                    d.granted_access,
                    d.handle_count,
                    d.pointer_count,
                ),
            };
            HandleInfo {
                handle,
                type_name: h.type_name.clone().filter(|s| !s.is_empty()),
                object_name: h.object_name.clone().filter(|s| !s.is_empty()),
                attributes,
                granted_access,
                handle_count,
                pointer_count,
                object_info_records: h.object_infos.len(),
            }
        })
        .collect()
}

/// The ThreadInfoList stream as [`ThreadTimes`], in stream order.
pub(crate) fn thread_times_from(list: &MinidumpThreadInfoList) -> Vec<ThreadTimes> {
    list.thread_infos
        .iter()
        .take(MAX_ENTRIES)
        .map(|t| ThreadTimes {
            thread_id: t.raw.thread_id,
            dump_flags: t.raw.dump_flags,
            exit_status: t.raw.exit_status,
            create_time: t.raw.create_time,
            exit_time: t.raw.exit_time,
            kernel_time: t.raw.kernel_time,
            user_time: t.raw.user_time,
            start_address: t.raw.start_address,
            affinity: t.raw.affinity,
        })
        .collect()
}

/// The UnloadedModuleList stream as [`UnloadedModule`]s, in stream order.
pub(crate) fn unloaded_from(list: &MinidumpUnloadedModuleList) -> Vec<UnloadedModule> {
    list.iter()
        .take(MAX_ENTRIES)
        .map(|m| UnloadedModule {
            base: m.raw.base_of_image,
            size: m.raw.size_of_image,
            checksum: m.raw.checksum,
            time_date_stamp: m.raw.time_date_stamp,
            name: m.name.clone(),
        })
        .collect()
}
