//! Bugcheck (stop code) decoding: names for the documented codes and the meaning of the four
//! parameters of the common ones.

use crate::ntstatus;

/// A decoded bugcheck.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBugcheck {
    /// The symbolic name (`SYSTEM_THREAD_EXCEPTION_NOT_HANDLED_M`), or `BUGCHECK_0x…`.
    pub name: String,
    /// What each of the four parameters means, as WinDbg's `!analyze -v` states it (empty when
    /// nothing is documented: the argument prints without a meaning).
    pub arguments: [String; 4],
    /// One line saying what happened.
    pub description: String,
    /// The address of the faulting instruction, when the parameters give one.
    pub faulting_address: Option<u64>,
    /// The address of a trap frame (`.trap`), when the parameters give one.
    pub trap_frame: Option<u64>,
    /// The address of an exception record (`.exr`), when the parameters give one.
    pub exception_record: Option<u64>,
    /// The address of a context record (`.cxr`), when the parameters give one.
    pub context_record: Option<u64>,
}

/// The documented bugcheck codes and their names.
pub const BUGCHECK_NAMES: &[(u32, &str)] = &[
    (0x01, "APC_INDEX_MISMATCH"),
    (0x02, "DEVICE_QUEUE_NOT_BUSY"),
    (0x03, "INVALID_AFFINITY_SET"),
    (0x04, "INVALID_DATA_ACCESS_TRAP"),
    (0x05, "INVALID_PROCESS_ATTACH_ATTEMPT"),
    (0x06, "INVALID_PROCESS_DETACH_ATTEMPT"),
    (0x07, "INVALID_SOFTWARE_INTERRUPT"),
    (0x08, "IRQL_NOT_DISPATCH_LEVEL"),
    (0x09, "IRQL_NOT_GREATER_OR_EQUAL"),
    (0x0A, "IRQL_NOT_LESS_OR_EQUAL"),
    (0x0B, "NO_EXCEPTION_HANDLING_SUPPORT"),
    (0x0C, "MAXIMUM_WAIT_OBJECTS_EXCEEDED"),
    (0x0D, "MUTEX_LEVEL_NUMBER_VIOLATION"),
    (0x0E, "NO_USER_MODE_CONTEXT"),
    (0x0F, "SPIN_LOCK_ALREADY_OWNED"),
    (0x10, "SPIN_LOCK_NOT_OWNED"),
    (0x11, "THREAD_NOT_MUTEX_OWNER"),
    (0x12, "TRAP_CAUSE_UNKNOWN"),
    (0x13, "EMPTY_THREAD_REAPER_LIST"),
    (0x14, "CREATE_DELETE_LOCK_NOT_LOCKED"),
    (0x15, "LAST_CHANCE_CALLED_FROM_KMODE"),
    (0x16, "CID_HANDLE_CREATION"),
    (0x17, "CID_HANDLE_DELETION"),
    (0x18, "REFERENCE_BY_POINTER"),
    (0x19, "BAD_POOL_HEADER"),
    (0x1A, "MEMORY_MANAGEMENT"),
    (0x1B, "PFN_SHARE_COUNT"),
    (0x1C, "PFN_REFERENCE_COUNT"),
    (0x1D, "NO_SPIN_LOCK_AVAILABLE"),
    (0x1E, "KMODE_EXCEPTION_NOT_HANDLED"),
    (0x1F, "SHARED_RESOURCE_CONV_ERROR"),
    (0x20, "KERNEL_APC_PENDING_DURING_EXIT"),
    (0x21, "QUOTA_UNDERFLOW"),
    (0x22, "FILE_SYSTEM"),
    (0x23, "FAT_FILE_SYSTEM"),
    (0x24, "NTFS_FILE_SYSTEM"),
    (0x25, "NPFS_FILE_SYSTEM"),
    (0x26, "CDFS_FILE_SYSTEM"),
    (0x27, "RDR_FILE_SYSTEM"),
    (0x28, "CORRUPT_ACCESS_TOKEN"),
    (0x29, "SECURITY_SYSTEM"),
    (0x2A, "INCONSISTENT_IRP"),
    (0x2B, "PANIC_STACK_SWITCH"),
    (0x2C, "PORT_DRIVER_INTERNAL"),
    (0x2D, "SCSI_DISK_DRIVER_INTERNAL"),
    (0x2E, "DATA_BUS_ERROR"),
    (0x2F, "INSTRUCTION_BUS_ERROR"),
    (0x30, "SET_OF_INVALID_CONTEXT"),
    (0x31, "PHASE0_INITIALIZATION_FAILED"),
    (0x32, "PHASE1_INITIALIZATION_FAILED"),
    (0x33, "UNEXPECTED_INITIALIZATION_CALL"),
    (0x34, "CACHE_MANAGER"),
    (0x35, "NO_MORE_IRP_STACK_LOCATIONS"),
    (0x36, "DEVICE_REFERENCE_COUNT_NOT_ZERO"),
    (0x37, "FLOPPY_INTERNAL_ERROR"),
    (0x38, "SERIAL_DRIVER_INTERNAL"),
    (0x39, "SYSTEM_EXIT_OWNED_MUTEX"),
    (0x3A, "SYSTEM_UNWIND_PREVIOUS_USER"),
    (0x3B, "SYSTEM_SERVICE_EXCEPTION"),
    (0x3C, "INTERRUPT_UNWIND_ATTEMPTED"),
    (0x3D, "INTERRUPT_EXCEPTION_NOT_HANDLED"),
    (0x3E, "MULTIPROCESSOR_CONFIGURATION_NOT_SUPPORTED"),
    (0x3F, "NO_MORE_SYSTEM_PTES"),
    (0x40, "TARGET_MDL_TOO_SMALL"),
    (0x41, "MUST_SUCCEED_POOL_EMPTY"),
    (0x42, "ATDISK_DRIVER_INTERNAL"),
    (0x43, "NO_SUCH_PARTITION"),
    (0x44, "MULTIPLE_IRP_COMPLETE_REQUESTS"),
    (0x45, "INSUFFICIENT_SYSTEM_MAP_REGS"),
    (0x46, "DEREF_UNKNOWN_LOGON_SESSION"),
    (0x47, "REF_UNKNOWN_LOGON_SESSION"),
    (0x48, "CANCEL_STATE_IN_COMPLETED_IRP"),
    (0x49, "PAGE_FAULT_WITH_INTERRUPTS_OFF"),
    (0x4A, "IRQL_GT_ZERO_AT_SYSTEM_SERVICE"),
    (0x4B, "STREAMS_INTERNAL_ERROR"),
    (0x4C, "FATAL_UNHANDLED_HARD_ERROR"),
    (0x4D, "NO_PAGES_AVAILABLE"),
    (0x4E, "PFN_LIST_CORRUPT"),
    (0x4F, "NDIS_INTERNAL_ERROR"),
    (0x50, "PAGE_FAULT_IN_NONPAGED_AREA"),
    (0x51, "REGISTRY_ERROR"),
    (0x52, "MAILSLOT_FILE_SYSTEM"),
    (0x53, "NO_BOOT_DEVICE"),
    (0x54, "LM_SERVER_INTERNAL_ERROR"),
    (0x55, "DATA_COHERENCY_EXCEPTION"),
    (0x56, "INSTRUCTION_COHERENCY_EXCEPTION"),
    (0x57, "XNS_INTERNAL_ERROR"),
    (0x58, "FTDISK_INTERNAL_ERROR"),
    (0x59, "PINBALL_FILE_SYSTEM"),
    (0x5A, "CRITICAL_SERVICE_FAILED"),
    (0x5B, "SET_ENV_VAR_FAILED"),
    (0x5C, "HAL_INITIALIZATION_FAILED"),
    (0x5D, "UNSUPPORTED_PROCESSOR"),
    (0x5E, "OBJECT_INITIALIZATION_FAILED"),
    (0x5F, "SECURITY_INITIALIZATION_FAILED"),
    (0x60, "PROCESS_INITIALIZATION_FAILED"),
    (0x61, "HAL1_INITIALIZATION_FAILED"),
    (0x62, "OBJECT1_INITIALIZATION_FAILED"),
    (0x63, "SECURITY1_INITIALIZATION_FAILED"),
    (0x64, "SYMBOLIC_INITIALIZATION_FAILED"),
    (0x65, "MEMORY1_INITIALIZATION_FAILED"),
    (0x66, "CACHE_INITIALIZATION_FAILED"),
    (0x67, "CONFIG_INITIALIZATION_FAILED"),
    (0x68, "FILE_INITIALIZATION_FAILED"),
    (0x69, "IO1_INITIALIZATION_FAILED"),
    (0x6A, "LPC_INITIALIZATION_FAILED"),
    (0x6B, "PROCESS1_INITIALIZATION_FAILED"),
    (0x6C, "REFMON_INITIALIZATION_FAILED"),
    (0x6D, "SESSION1_INITIALIZATION_FAILED"),
    (0x6E, "SESSION2_INITIALIZATION_FAILED"),
    (0x6F, "SESSION3_INITIALIZATION_FAILED"),
    (0x70, "SESSION4_INITIALIZATION_FAILED"),
    (0x71, "SESSION5_INITIALIZATION_FAILED"),
    (0x72, "ASSIGN_DRIVE_LETTERS_FAILED"),
    (0x73, "CONFIG_LIST_FAILED"),
    (0x74, "BAD_SYSTEM_CONFIG_INFO"),
    (0x75, "CANNOT_WRITE_CONFIGURATION"),
    (0x76, "PROCESS_HAS_LOCKED_PAGES"),
    (0x77, "KERNEL_STACK_INPAGE_ERROR"),
    (0x78, "PHASE0_EXCEPTION"),
    (0x79, "MISMATCHED_HAL"),
    (0x7A, "KERNEL_DATA_INPAGE_ERROR"),
    (0x7B, "INACCESSIBLE_BOOT_DEVICE"),
    (0x7C, "BUGCODE_NDIS_DRIVER"),
    (0x7D, "INSTALL_MORE_MEMORY"),
    (0x7E, "SYSTEM_THREAD_EXCEPTION_NOT_HANDLED"),
    (0x7F, "UNEXPECTED_KERNEL_MODE_TRAP"),
    (0x80, "NMI_HARDWARE_FAILURE"),
    (0x81, "SPIN_LOCK_INIT_FAILURE"),
    (0x82, "DFS_FILE_SYSTEM"),
    (0x85, "SETUP_FAILURE"),
    (0x8B, "MBR_CHECKSUM_MISMATCH"),
    (0x8E, "KERNEL_MODE_EXCEPTION_NOT_HANDLED"),
    (0x8F, "PP0_INITIALIZATION_FAILED"),
    (0x90, "PP1_INITIALIZATION_FAILED"),
    (0x92, "UP_DRIVER_ON_MP_SYSTEM"),
    (0x93, "INVALID_KERNEL_HANDLE"),
    (0x94, "KERNEL_STACK_LOCKED_AT_EXIT"),
    (0x96, "INVALID_WORK_QUEUE_ITEM"),
    (0x97, "BOUND_IMAGE_UNSUPPORTED"),
    (0x98, "END_OF_NT_EVALUATION_PERIOD"),
    (0x99, "INVALID_REGION_OR_SEGMENT"),
    (0x9A, "SYSTEM_LICENSE_VIOLATION"),
    (0x9B, "UDFS_FILE_SYSTEM"),
    (0x9C, "MACHINE_CHECK_EXCEPTION"),
    (0x9E, "USER_MODE_HEALTH_MONITOR"),
    (0x9F, "DRIVER_POWER_STATE_FAILURE"),
    (0xA0, "INTERNAL_POWER_ERROR"),
    (0xA1, "PCI_BUS_DRIVER_INTERNAL"),
    (0xA2, "MEMORY_IMAGE_CORRUPT"),
    (0xA3, "ACPI_DRIVER_INTERNAL"),
    (0xA4, "CNSS_FILE_SYSTEM_FILTER"),
    (0xA5, "ACPI_BIOS_ERROR"),
    (0xA7, "BAD_EXHANDLE"),
    (0xAB, "SESSION_HAS_VALID_POOL_ON_EXIT"),
    (0xAC, "HAL_MEMORY_ALLOCATION"),
    (0xAD, "VIDEO_DRIVER_DEBUG_REPORT_REQUEST"),
    (0xB1, "BGI_DETECTED_VIOLATION"),
    (0xB4, "VIDEO_DRIVER_INIT_FAILURE"),
    (0xB8, "ATTEMPTED_SWITCH_FROM_DPC"),
    (0xB9, "CHIPSET_DETECTED_ERROR"),
    (0xBA, "SESSION_HAS_VALID_VIEWS_ON_EXIT"),
    (0xBB, "NETWORK_BOOT_INITIALIZATION_FAILED"),
    (0xBC, "NETWORK_BOOT_DUPLICATE_ADDRESS"),
    (0xBD, "INVALID_HIBERNATED_STATE"),
    (0xBE, "ATTEMPTED_WRITE_TO_READONLY_MEMORY"),
    (0xBF, "MUTEX_ALREADY_OWNED"),
    (0xC1, "SPECIAL_POOL_DETECTED_MEMORY_CORRUPTION"),
    (0xC2, "BAD_POOL_CALLER"),
    (0xC4, "DRIVER_VERIFIER_DETECTED_VIOLATION"),
    (0xC5, "DRIVER_CORRUPTED_EXPOOL"),
    (0xC6, "DRIVER_CAUGHT_MODIFYING_FREED_POOL"),
    (0xC7, "TIMER_OR_DPC_INVALID"),
    (0xC8, "IRQL_UNEXPECTED_VALUE"),
    (0xC9, "DRIVER_VERIFIER_IOMANAGER_VIOLATION"),
    (0xCA, "PNP_DETECTED_FATAL_ERROR"),
    (0xCB, "DRIVER_LEFT_LOCKED_PAGES_IN_PROCESS"),
    (0xCC, "PAGE_FAULT_IN_FREED_SPECIAL_POOL"),
    (0xCD, "PAGE_FAULT_BEYOND_END_OF_ALLOCATION"),
    (
        0xCE,
        "DRIVER_UNLOADED_WITHOUT_CANCELLING_PENDING_OPERATIONS",
    ),
    (
        0xCF,
        "TERMINAL_SERVER_DRIVER_MADE_INCORRECT_MEMORY_REFERENCE",
    ),
    (0xD0, "DRIVER_CORRUPTED_MMPOOL"),
    (0xD1, "DRIVER_IRQL_NOT_LESS_OR_EQUAL"),
    (0xD2, "BUGCODE_ID_DRIVER"),
    (0xD3, "DRIVER_PORTION_MUST_BE_NONPAGED"),
    (
        0xD4,
        "SYSTEM_SCAN_AT_RAISED_IRQL_CAUGHT_IMPROPER_DRIVER_UNLOAD",
    ),
    (0xD5, "DRIVER_PAGE_FAULT_IN_FREED_SPECIAL_POOL"),
    (0xD6, "DRIVER_PAGE_FAULT_BEYOND_END_OF_ALLOCATION"),
    (0xD7, "DRIVER_UNMAPPING_INVALID_VIEW"),
    (0xD8, "DRIVER_USED_EXCESSIVE_PTES"),
    (0xD9, "LOCKED_PAGES_TRACKER_CORRUPTION"),
    (0xDA, "SYSTEM_PTE_MISUSE"),
    (0xDB, "DRIVER_CORRUPTED_SYSPTES"),
    (0xDC, "DRIVER_INVALID_STACK_ACCESS"),
    (0xDE, "POOL_CORRUPTION_IN_FILE_AREA"),
    (0xDF, "IMPERSONATING_WORKER_THREAD"),
    (0xE0, "ACPI_BIOS_FATAL_ERROR"),
    (0xE1, "WORKER_THREAD_RETURNED_AT_BAD_IRQL"),
    (0xE2, "MANUALLY_INITIATED_CRASH"),
    (0xE3, "RESOURCE_NOT_OWNED"),
    (0xE4, "WORKER_INVALID"),
    (0xE6, "DRIVER_VERIFIER_DMA_VIOLATION"),
    (0xE7, "INVALID_FLOATING_POINT_STATE"),
    (0xE8, "INVALID_CANCEL_OF_FILE_OPEN"),
    (0xE9, "ACTIVE_EX_WORKER_THREAD_TERMINATION"),
    (0xEA, "THREAD_STUCK_IN_DEVICE_DRIVER"),
    (0xEB, "DIRTY_MAPPED_PAGES_CONGESTION"),
    (0xEC, "SESSION_HAS_VALID_SPECIAL_POOL_ON_EXIT"),
    (0xED, "UNMOUNTABLE_BOOT_VOLUME"),
    (0xEF, "CRITICAL_PROCESS_DIED"),
    (0xF0, "STORAGE_MINIPORT_ERROR"),
    (0xF1, "SCSI_VERIFIER_DETECTED_VIOLATION"),
    (0xF2, "HARDWARE_INTERRUPT_STORM"),
    (0xF3, "DISORDERLY_SHUTDOWN"),
    (0xF4, "CRITICAL_OBJECT_TERMINATION"),
    (0xF5, "FLTMGR_FILE_SYSTEM"),
    (0xF6, "PCI_VERIFIER_DETECTED_VIOLATION"),
    (0xF7, "DRIVER_OVERRAN_STACK_BUFFER"),
    (0xF8, "RAMDISK_BOOT_INITIALIZATION_FAILED"),
    (0xF9, "DRIVER_RETURNED_STATUS_REPARSE_FOR_VOLUME_OPEN"),
    (0xFA, "HTTP_DRIVER_CORRUPTED"),
    (0xFC, "ATTEMPTED_EXECUTE_OF_NOEXECUTE_MEMORY"),
    (0xFD, "DIRTY_NOWRITE_PAGES_CONGESTION"),
    (0xFE, "BUGCODE_USB_DRIVER"),
    (0xFF, "RESERVE_QUEUE_OVERFLOW"),
    (0x100, "LOADER_BLOCK_MISMATCH"),
    (0x101, "CLOCK_WATCHDOG_TIMEOUT"),
    (0x102, "DPC_WATCHDOG_TIMEOUT"),
    (0x103, "MUP_FILE_SYSTEM"),
    (0x104, "AGP_INVALID_ACCESS"),
    (0x105, "AGP_GART_CORRUPTION"),
    (0x106, "AGP_ILLEGALLY_REPROGRAMMED"),
    (0x108, "THIRD_PARTY_FILE_SYSTEM_FAILURE"),
    (0x109, "CRITICAL_STRUCTURE_CORRUPTION"),
    (0x10A, "APP_TAGGING_INITIALIZATION_FAILED"),
    (0x10C, "FSRTL_EXTRA_CREATE_PARAMETER_VIOLATION"),
    (0x10D, "WDF_VIOLATION"),
    (0x10E, "VIDEO_MEMORY_MANAGEMENT_INTERNAL"),
    (0x10F, "RESOURCE_MANAGER_EXCEPTION_NOT_HANDLED"),
    (0x111, "RECURSIVE_NMI"),
    (0x112, "MSRPC_STATE_VIOLATION"),
    (0x113, "VIDEO_DXGKRNL_FATAL_ERROR"),
    (0x114, "VIDEO_SHADOW_DRIVER_FATAL_ERROR"),
    (0x115, "AGP_INTERNAL"),
    (0x116, "VIDEO_TDR_FAILURE"),
    (0x117, "VIDEO_TDR_TIMEOUT_DETECTED"),
    (0x119, "VIDEO_SCHEDULER_INTERNAL_ERROR"),
    (0x11A, "EM_INITIALIZATION_FAILURE"),
    (0x11B, "DRIVER_RETURNED_HOLDING_CANCEL_LOCK"),
    (0x11C, "ATTEMPTED_WRITE_TO_CM_PROTECTED_STORAGE"),
    (0x11D, "EVENT_TRACING_FATAL_ERROR"),
    (0x11E, "TOO_MANY_RECURSIVE_FAULTS"),
    (0x11F, "INVALID_DRIVER_HANDLE"),
    (0x120, "BITLOCKER_FATAL_ERROR"),
    (0x121, "DRIVER_VIOLATION"),
    (0x122, "WHEA_INTERNAL_ERROR"),
    (0x123, "CRYPTO_SELF_TEST_FAILURE"),
    (0x124, "WHEA_UNCORRECTABLE_ERROR"),
    (0x125, "NMR_INVALID_STATE"),
    (0x126, "NETIO_INVALID_POOL_CALLER"),
    (0x127, "PAGE_NOT_ZERO"),
    (0x128, "WORKER_THREAD_RETURNED_WITH_BAD_IO_PRIORITY"),
    (0x129, "WORKER_THREAD_RETURNED_WITH_BAD_PAGING_IO_PRIORITY"),
    (0x12A, "MUI_NO_VALID_SYSTEM_LANGUAGE"),
    (0x12B, "FAULTY_HARDWARE_CORRUPTED_PAGE"),
    (0x12C, "EXFAT_FILE_SYSTEM"),
    (0x12D, "VOLSNAP_OVERLAPPED_TABLE_ACCESS"),
    (0x12E, "INVALID_MDL_RANGE"),
    (0x12F, "VHD_BOOT_INITIALIZATION_FAILED"),
    (0x130, "DYNAMIC_ADD_PROCESSOR_MISMATCH"),
    (0x131, "INVALID_EXTENDED_PROCESSOR_STATE"),
    (0x132, "RESOURCE_OWNER_POINTER_INVALID"),
    (0x133, "DPC_WATCHDOG_VIOLATION"),
    (0x134, "DRIVE_EXTENDER"),
    (0x135, "REGISTRY_FILTER_DRIVER_EXCEPTION"),
    (0x136, "VHD_BOOT_HOST_VOLUME_NOT_ENOUGH_SPACE"),
    (0x137, "WIN32K_HANDLE_MANAGER"),
    (0x138, "GPIO_CONTROLLER_DRIVER_ERROR"),
    (0x139, "KERNEL_SECURITY_CHECK_FAILURE"),
    (0x13A, "KERNEL_MODE_HEAP_CORRUPTION"),
    (0x13B, "PASSIVE_INTERRUPT_ERROR"),
    (0x13C, "INVALID_IO_BOOST_STATE"),
    (0x13D, "CRITICAL_INITIALIZATION_FAILURE"),
    (0x140, "STORAGE_DEVICE_ABNORMALITY_DETECTED"),
    (0x143, "PROCESSOR_DRIVER_INTERNAL"),
    (0x144, "BUGCODE_USB3_DRIVER"),
    (0x145, "SECURE_BOOT_VIOLATION"),
    (0x147, "ABNORMAL_RESET_DETECTED"),
    (0x149, "REFS_FILE_SYSTEM"),
    (0x14A, "KERNEL_WMI_INTERNAL"),
    (0x14B, "SOC_SUBSYSTEM_FAILURE"),
    (0x14C, "FATAL_ABNORMAL_RESET_ERROR"),
    (0x14D, "EXCEPTION_SCOPE_INVALID"),
    (0x14E, "SOC_CRITICAL_DEVICE_REMOVED"),
    (0x14F, "PDC_WATCHDOG_TIMEOUT"),
    (0x150, "TCPIP_AOAC_NIC_ACTIVE_REFERENCE_LEAK"),
    (0x151, "UNSUPPORTED_INSTRUCTION_MODE"),
    (0x152, "INVALID_PUSH_LOCK_FLAGS"),
    (0x153, "KERNEL_LOCK_ENTRY_LEAKED_ON_THREAD_TERMINATION"),
    (0x154, "UNEXPECTED_STORE_EXCEPTION"),
    (0x155, "OS_DATA_TAMPERING"),
    (0x156, "WINSOCK_DETECTED_HUNG_CLOSESOCKET_LIVEDUMP"),
    (0x157, "KERNEL_THREAD_PRIORITY_FLOOR_VIOLATION"),
    (0x158, "ILLEGAL_IOMMU_PAGE_FAULT"),
    (0x159, "HAL_ILLEGAL_IOMMU_PAGE_FAULT"),
    (0x15A, "SDBUS_INTERNAL_ERROR"),
    (
        0x15B,
        "WORKER_THREAD_RETURNED_WITH_SYSTEM_PAGE_PRIORITY_ACTIVE",
    ),
    (0x15C, "PDC_WATCHDOG_TIMEOUT_LIVEDUMP"),
    (0x15F, "CONNECTED_STANDBY_WATCHDOG_TIMEOUT_LIVEDUMP"),
    (0x160, "WIN32K_ATOMIC_CHECK_FAILURE"),
    (0x161, "LIVE_SYSTEM_DUMP"),
    (0x162, "KERNEL_AUTO_BOOST_INVALID_LOCK_RELEASE"),
    (0x163, "WORKER_THREAD_TEST_CONDITION"),
    (0x164, "WIN32K_CRITICAL_FAILURE"),
    (0x16C, "INVALID_RUNDOWN_PROTECTION_FLAGS"),
    (0x16D, "INVALID_SLOT_ALLOCATOR_FLAGS"),
    (0x16E, "ERESOURCE_INVALID_RELEASE"),
    (0x170, "CLUSTER_CSV_CLUSSVC_DISCONNECT_WATCHDOG"),
    (0x171, "CRYPTO_LIBRARY_INTERNAL_ERROR"),
    (0x173, "COREMSGCALL_INTERNAL_ERROR"),
    (0x174, "COREMSG_INTERNAL_ERROR"),
    (0x178, "ELAM_DRIVER_DETECTED_FATAL_ERROR"),
    (0x17B, "PROFILER_CONFIGURATION_ILLEGAL"),
    (0x17E, "MICROCODE_REVISION_MISMATCH"),
    (0x187, "VIDEO_DWMINIT_TIMEOUT_FALLBACK_BDD"),
    (0x189, "BAD_OBJECT_HEADER"),
    (0x18B, "SECURE_KERNEL_ERROR"),
    (0x18C, "HYPERGUARD_VIOLATION"),
    (0x18D, "SECURE_FAULT_UNHANDLED"),
    (0x18E, "KERNEL_PARTITION_REFERENCE_VIOLATION"),
    (0x190, "WIN32K_CRITICAL_FAILURE_LIVEDUMP"),
    (0x191, "PF_DETECTED_CORRUPTION"),
    (0x192, "KERNEL_AUTO_BOOST_LOCK_ACQUISITION_WITH_RAISED_IRQL"),
    (0x193, "VIDEO_DXGKRNL_LIVEDUMP"),
    (0x195, "SMB_SERVER_LIVEDUMP"),
    (0x196, "LOADER_ROLLBACK_DETECTED"),
    (0x197, "WIN32K_SECURITY_FAILURE"),
    (0x198, "UFX_LIVEDUMP"),
    (0x199, "KERNEL_STORAGE_SLOT_IN_USE"),
    (0x19A, "WORKER_THREAD_RETURNED_WHILE_ATTACHED_TO_SILO"),
    (0x19B, "TTM_FATAL_ERROR"),
    (0x19C, "WIN32K_POWER_WATCHDOG_TIMEOUT"),
    (0x19D, "CLUSTER_SVHDX_LIVEDUMP"),
    (0x1A0, "TTM_WATCHDOG_TIMEOUT"),
    (0x1A1, "WIN32K_CALLOUT_WATCHDOG_LIVEDUMP"),
    (0x1A2, "WIN32K_CALLOUT_WATCHDOG_BUGCHECK"),
    (0x1A3, "CALL_HAS_NOT_RETURNED_WATCHDOG_TIMEOUT_LIVEDUMP"),
    (0x1A4, "DRIPS_SW_HW_DIVERGENCE_LIVEDUMP"),
    (0x1A5, "USB_DRIPS_BLOCKER_SURPRISE_REMOVAL_LIVEDUMP"),
    (0x1A6, "BLUETOOTH_ERROR_RECOVERY_LIVEDUMP"),
    (0x1A7, "SMB_REDIRECTOR_LIVEDUMP"),
    (0x1A8, "VIDEO_DXGKRNL_BLACK_SCREEN_LIVEDUMP"),
    (0x1B0, "VIDEO_MINIPORT_FAILED_LIVEDUMP"),
    (0x1B8, "VIDEO_MINIPORT_BLACK_SCREEN_LIVEDUMP"),
    (0x1C4, "DRIVER_VERIFIER_DETECTED_VIOLATION_LIVEDUMP"),
    (0x1C5, "IO_THREADPOOL_DEADLOCK_LIVEDUMP"),
    (0x1C6, "FAST_ERESOURCE_PRECONDITION_VIOLATION"),
    (0x1C7, "STORE_DATA_STRUCTURE_CORRUPTION"),
    (0x1C8, "MANUALLY_INITIATED_POWER_BUTTON_HOLD"),
    (0x1C9, "USER_MODE_HEALTH_MONITOR_LIVEDUMP"),
    (0x1CA, "SYNTHETIC_WATCHDOG_TIMEOUT"),
    (0x1CB, "INVALID_SILO_DETACH"),
    (0x1CC, "EXRESOURCE_TIMEOUT_LIVEDUMP"),
    (0x1CD, "INVALID_CALLBACK_STACK_ADDRESS"),
    (0x1CE, "INVALID_KERNEL_STACK_ADDRESS"),
    (0x1CF, "HARDWARE_WATCHDOG_TIMEOUT"),
    (0x1D0, "CPI_FIRMWARE_WATCHDOG_TIMEOUT"),
    (0x1D2, "WORKER_THREAD_INVALID_STATE"),
    (0x1D3, "WFP_INVALID_OPERATION"),
    (0x1D5, "DRIVER_PNP_WATCHDOG"),
    (
        0x1D6,
        "WORKER_THREAD_RETURNED_WITH_NON_DEFAULT_WORKLOAD_CLASS",
    ),
    (0x1D7, "EFS_FATAL_ERROR"),
    (0x1D8, "UCMUCSI_FAILURE"),
    (0x1D9, "HAL_IOMMU_INTERNAL_ERROR"),
    (0x1DA, "HAL_BLOCKED_PROCESSOR_INTERNAL_ERROR"),
    (0x1DB, "IPI_WATCHDOG_TIMEOUT"),
    (0x1DC, "DMA_COMMON_BUFFER_VECTOR_ERROR"),
    (0x1DD, "BUGCODE_MBBADAPTER_DRIVER"),
    (0x1DE, "BUGCODE_WIFIADAPTER_DRIVER"),
    (0x1DF, "PROCESSOR_START_TIMEOUT"),
    (0x1E4, "VIDEO_DXGKRNL_SYSMM_FATAL_ERROR"),
    (0x1E9, "ILLEGAL_ATS_INITIALIZATION"),
    (0x1EA, "SECURE_PCI_CONFIG_SPACE_ACCESS_VIOLATION"),
    (0x1EB, "DAM_WATCHDOG_TIMEOUT"),
    (0x1ED, "HANDLE_ERROR_ON_CRITICAL_THREAD"),
    (0x356, "XBOX_ERACTRL_CS_TIMEOUT"),
    (0xBFE, "BC_BLUETOOTH_VERIFIER_FAULT"),
    (0xBFF, "BC_BTHMINI_VERIFIER_FAULT"),
    (0x20001, "HYPERVISOR_ERROR"),
    (0x1000007E, "SYSTEM_THREAD_EXCEPTION_NOT_HANDLED_M"),
    (0x1000007F, "UNEXPECTED_KERNEL_MODE_TRAP_M"),
    (0x1000008E, "KERNEL_MODE_EXCEPTION_NOT_HANDLED_M"),
    (0x100000EA, "THREAD_STUCK_IN_DEVICE_DRIVER_M"),
    (0x4000008A, "THREAD_TERMINATE_HELD_MUTEX"),
    (0xC0000218, "STATUS_CANNOT_LOAD_REGISTRY_FILE"),
    (0xC000021A, "WINLOGON_FATAL_ERROR"),
    (0xC0000221, "STATUS_IMAGE_CHECKSUM_MISMATCH"),
    (0xDEADDEAD, "MANUALLY_INITIATED_CRASH1"),
];

/// The name of a bugcheck code (`BUGCHECK_0x…` when undocumented).
pub fn bugcheck_name(code: u32) -> String {
    BUGCHECK_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, n)| (*n).to_string())
        .unwrap_or_else(|| format!("BUGCHECK_{code:#X}"))
}

fn status_text(code: u64) -> String {
    let code = code as u32;
    match ntstatus::exception_name(code) {
        Some((_, text)) => format!("{code:08x} ({})", text.to_ascii_lowercase()),
        None => format!("{code:08x}"),
    }
}

fn access(kind: u64) -> &'static str {
    match kind {
        0 => "read",
        1 => "write",
        8 => "execute",
        _ => "access",
    }
}

/// Decodes a bugcheck's code and parameters.
pub fn decode_bugcheck(code: u32, p: [u64; 4]) -> DecodedBugcheck {
    let name = bugcheck_name(code);
    let s = |t: &str| t.to_string();
    // No documented meaning: the argument prints bare, as WinDbg prints it.
    let none = String::new;
    let mut d = DecodedBugcheck {
        name: name.clone(),
        arguments: [none(), none(), none(), none()],
        description: format!("bugcheck {code:#x} ({name})"),
        faulting_address: None,
        trap_frame: None,
        exception_record: None,
        context_record: None,
    };
    match code {
        0x0A | 0xD1 => {
            d.arguments = [
                s("memory referenced"),
                s("IRQL"),
                s("bitfield: bit 0 = write, bit 3 = execute (else read)"),
                s("address which referenced memory"),
            ];
            d.faulting_address = Some(p[3]);
            let what = if p[2] & 8 != 0 {
                "execute"
            } else if p[2] & 1 != 0 {
                "write"
            } else {
                "read"
            };
            d.description = format!(
                "{what} of {:#x} at IRQL {} (too high for pageable or invalid memory) by code at {:#x}",
                p[0], p[1], p[3]
            );
        }
        0x1E | 0x8E | 0x1000008E => {
            d.arguments = if code == 0x1E {
                [
                    s("the exception code that was not handled"),
                    s("the address where the exception occurred"),
                    s("parameter 0 of the exception"),
                    s("parameter 1 of the exception"),
                ]
            } else {
                d.trap_frame = Some(p[2]).filter(|&v| v != 0);
                [
                    s("the exception code that was not handled"),
                    s("the address where the exception occurred"),
                    s("trap frame (.trap)"),
                    s("reserved"),
                ]
            };
            d.faulting_address = Some(p[1]);
            d.description = format!(
                "kernel-mode exception {} not handled at {:#x}",
                status_text(p[0]),
                p[1]
            );
            if code == 0x1E && p[0] as u32 == 0xC000_0005 {
                d.description
                    .push_str(&format!(" ({} of {:#x})", access(p[2]), p[3]));
            }
        }
        0x3B => {
            d.arguments = [
                s("the exception code"),
                s("the address of the instruction that caused the exception"),
                s("the address of the context record for the exception"),
                none(),
            ];
            d.faulting_address = Some(p[1]);
            d.context_record = Some(p[2]).filter(|&v| v != 0);
            d.description = format!(
                "exception {} in a system service at {:#x}",
                status_text(p[0]),
                p[1]
            );
        }
        0x50 => {
            d.arguments = [
                s("memory referenced"),
                s("access type: 0 read, 1 write, 2 execute (8 on some builds)"),
                s("address of the instruction which referenced the memory, if known"),
                s("type of page fault (Windows 10 1703+)"),
            ];
            d.faulting_address = Some(p[2]).filter(|&v| v != 0);
            let kind = match p[1] {
                0 => "read",
                1 => "write",
                2 | 8 => "execute",
                _ => "access",
            };
            d.description = format!(
                "invalid system memory referenced: {kind} of {:#x} by code at {:#x}",
                p[0], p[2]
            );
        }
        0x7E | 0x1000007E => {
            d.arguments = [
                s("the exception code that was not handled"),
                s("the address where the exception occurred"),
                s("exception record address (.exr)"),
                s("context record address (.cxr)"),
            ];
            d.faulting_address = Some(p[1]);
            d.exception_record = Some(p[2]).filter(|&v| v != 0);
            d.context_record = Some(p[3]).filter(|&v| v != 0);
            d.description = format!(
                "a system thread raised exception {} at {:#x} that no handler caught",
                status_text(p[0]),
                p[1]
            );
        }
        0x7F | 0x1000007F => {
            d.arguments = [
                s("the trap number (8 = double fault)"),
                s("reserved"),
                s("reserved"),
                s("reserved"),
            ];
            let trap = match p[0] {
                0 => "divide error",
                4 => "overflow",
                5 => "bound check",
                6 => "invalid opcode",
                8 => "double fault (often a kernel stack overflow)",
                0xd => "general protection fault",
                _ => "processor trap",
            };
            d.description = format!("unexpected kernel-mode trap {:#x}: {trap}", p[0]);
        }
        0x9F => {
            d.arguments = [
                s("subcode (3 = device object blocked an IRP too long)"),
                s("physical device object or type-specific value"),
                s("functional device object / nt!TRIAGE_9F_POWER or type-specific value"),
                s("the blocked IRP or type-specific value"),
            ];
            d.description = match p[0] {
                3 => format!(
                    "a device object blocked power IRP {:#x} for too long (PDO {:#x})",
                    p[3], p[1]
                ),
                4 => {
                    "power state transition timed out waiting to synchronize with the PnP subsystem"
                        .into()
                }
                1 => "a device object was freed while it had an outstanding power request".into(),
                other => format!("driver power state failure, subcode {other:#x}"),
            };
        }
        0xA0 => {
            d.arguments = [
                s("subcode: the type of power error"),
                s("type-specific"),
                s("type-specific"),
                s("type-specific"),
            ];
            d.description = format!("internal power policy error, subcode {:#x}", p[0]);
        }
        0xC2 => {
            d.arguments = [
                s("the type of pool violation"),
                s("type-specific (often the pool header or the IRQL)"),
                s("type-specific (often the pool type or address)"),
                s("type-specific"),
            ];
            d.description = format!("bad pool request by the current thread, type {:#x}", p[0]);
        }
        0xC4 => {
            d.arguments = [
                s("the Driver Verifier violation code"),
                s("violation-specific"),
                s("violation-specific"),
                s("violation-specific"),
            ];
            d.description = format!("Driver Verifier caught violation {:#x}", p[0]);
        }
        0xEF => {
            d.arguments = [
                s("the process object that died"),
                s("0: a process died, 1: a thread died"),
                s("reserved"),
                s("reserved"),
            ];
            let what = if p[1] == 1 { "thread" } else { "process" };
            d.description = format!("a critical system {what} died (process {:#x})", p[0]);
        }
        0x133 => {
            d.arguments = [
                s("0: a single DPC exceeded its time; 1: the system spent too long at DISPATCH_LEVEL or above"),
                s("the DPC time count (ticks) or watchdog count"),
                s("the DPC time allotment (ticks)"),
                s("nt!DPC_WATCHDOG_GLOBAL_TRIAGE_BLOCK (when parameter 1 is 1)"),
            ];
            d.description = if p[0] == 0 {
                format!(
                    "a DPC ran for {} ticks, over its {}-tick allotment",
                    p[1], p[2]
                )
            } else {
                "the system stayed at IRQL DISPATCH_LEVEL or above too long".into()
            };
        }
        0x139 => {
            d.arguments = [
                s("the type of corruption (FAST_FAIL code)"),
                s("address of the trap frame for the exception that caused the bugcheck"),
                s("address of the exception record for the exception that caused the bugcheck"),
                s("reserved"),
            ];
            d.trap_frame = Some(p[1]).filter(|&v| v != 0);
            d.exception_record = Some(p[2]).filter(|&v| v != 0);
            let kind = ntstatus::fast_fail_name(p[0]).unwrap_or("kernel data structure corruption");
            d.description = format!("kernel security check failure {:#x}: {kind}", p[0]);
        }
        0x1C8 => {
            d.description =
                "the user held the power button to collect a dump (manually initiated)".into();
        }
        0x4A => {
            d.arguments = [
                s("address of the system function (system call routine)"),
                s("the IRQL that was held"),
                s("zero"),
                s("zero"),
            ];
            d.description = format!(
                "a thread returned to user mode from a system call at IRQL {} instead of PASSIVE_LEVEL: a driver raised the IRQL (or took a spin lock) and did not lower it",
                p[1]
            );
        }
        0x109 => {
            d.arguments = [
                s("reserved"),
                s("reserved"),
                s("reserved"),
                s("the type of the corrupted region"),
            ];
            let region = match p[3] {
                0 => "a generic data region",
                1 => "a function or .pdata",
                2 => "the processor IDT",
                3 => "the processor GDT",
                4 => "a type-1 process list",
                5 => "a type-2 process list",
                6 => "the debug routine",
                7 => "a critical MSR",
                _ => "a critical kernel structure",
            };
            d.description = format!(
                "kernel code or data was modified ({region}, type {:#x}): a driver patched the kernel, or memory was corrupted by hardware",
                p[3]
            );
        }
        0x116 => {
            d.arguments = [
                s("pointer to the internal TDR recovery context (TDR_RECOVERY_CONTEXT)"),
                s("pointer into the responsible device driver module (the owner tag)"),
                s("error code of the last failed operation"),
                s("internal context-dependent data"),
            ];
            d.faulting_address = Some(p[1]).filter(|&v| v != 0);
            d.description = format!(
                "the display driver did not recover from a GPU timeout (TDR); the responsible driver holds {:#x}",
                p[1]
            );
        }
        0x13A => {
            d.arguments = [
                s("the type of heap corruption"),
                s("address of the heap that reported the corruption"),
                s("address at which the corruption was detected"),
                s("reserved"),
            ];
            let kind = match p[0] {
                3 => "a corrupt entry header",
                4 => "multiple corrupt entry headers",
                5 => "a corrupt entry header in a large allocation",
                6 => "a corruption consistent with a buffer overrun",
                7 => "a corruption consistent with a buffer underrun",
                8 | 0xF => "a free block passed to an operation valid only for busy blocks",
                9 => "an invalid argument to a heap operation",
                0xA => "an invalid allocation type",
                0xB => "a corruption consistent with a use after free",
                0xC => "the wrong heap passed to an operation",
                0xD => "an invalid free list",
                0xE => "list corruption outside the free list",
                0x10..=0x12 => "invalid internal state (usually a buffer overflow)",
                0x13 => "a NULL heap handle",
                0x14 => "an allocation larger than the allocation limit",
                0x15 => "a commit request over the commit limit",
                _ => "kernel heap corruption",
            };
            d.description = format!(
                "the kernel-mode heap detected {kind} (type {:#x}) at {:#x} in heap {:#x}",
                p[0], p[2], p[1]
            );
        }
        0x1A => {
            d.arguments = [
                s("the subtype of memory management violation"),
                s("subtype-specific"),
                s("subtype-specific"),
                s("subtype-specific"),
            ];
            d.description = format!("memory management error, subtype {:#x}", p[0]);
        }
        0x19 => {
            d.arguments = [
                s("the type of pool header corruption"),
                s("subtype-specific (often the pool entry)"),
                s("subtype-specific"),
                s("subtype-specific"),
            ];
            d.description = format!("a pool header is corrupt (type {:#x})", p[0]);
        }
        0x101 => {
            d.arguments = [
                s("clock interrupt time-out interval, in ticks"),
                none(),
                s("address of the PRCB of the unresponsive processor"),
                none(),
            ];
            d.description = format!(
                "a secondary processor stopped answering clock interrupts (PRCB {:#x})",
                p[2]
            );
        }
        0x124 => {
            d.arguments = [
                s("the type of error source (WHEA_ERROR_SOURCE_TYPE)"),
                s("address of the WHEA_ERROR_RECORD"),
                s("high 32 bits of MCi_STATUS (machine check) or source-specific"),
                s("low 32 bits of MCi_STATUS (machine check) or source-specific"),
            ];
            d.description = format!(
                "a fatal hardware error was reported (WHEA error record at {:#x})",
                p[1]
            );
        }
        0xBE | 0xFC => {
            d.arguments = [
                s("virtual address of the attempted write / execute"),
                s("PTE contents"),
                s("address of the trap frame, if any"),
                s("reserved"),
            ];
            d.trap_frame = Some(p[2]).filter(|&v| v != 0);
            let what = if code == 0xBE {
                "write to read-only"
            } else {
                "execute of no-execute"
            };
            d.description = format!("attempted {what} memory at {:#x}", p[0]);
        }
        0xE2 | 0xDEADDEAD => {
            d.description =
                "the crash was initiated manually (keyboard, debugger or a driver asking for it)"
                    .into();
        }
        0x80 => {
            d.description =
                "a non-maskable interrupt: a hardware error, or the NMI button pressed to get a dump"
                    .into();
        }
        _ => {}
    }
    d
}

/// The bugcheck in words: its name, what happened, and the meaning of each argument; the
/// current process when the dump's EPROCESS copy names it.
fn bugcheck_inference(
    bugcheck: &ntdbg_targets::Bugcheck,
    d: &DecodedBugcheck,
    process: Option<&(String, usize)>,
) -> crate::conclusion::Inference {
    let mut text = format!("{} ({:#x}): {}", d.name, bugcheck.code, d.description);
    if let Some((name, _)) = process {
        text.push_str(&format!("; the current process is {name}"));
    }
    let mut basis = format!("the dump header's bugcheck code {:#x}", bugcheck.code);
    for (i, (value, meaning)) in bugcheck.parameters.iter().zip(&d.arguments).enumerate() {
        basis.push_str(&format!("; Arg{} = {value:#x}", i + 1));
        if !meaning.is_empty() {
            basis.push_str(&format!(" ({meaning})"));
        }
    }
    if let Some((name, offset)) = process {
        basis.push_str(&format!(
            "; process {name}: the ImageFileName field at {offset:#x} of the dump's copy of the current EPROCESS (the one zero-padded image name there; no kernel symbols needed)"
        ));
    }
    crate::conclusion::Inference::new("bugcheck", text, basis)
}

/// The register context of the fault a bugcheck's parameters point to: its CONTEXT record
/// (`.cxr`), else its x64 trap frame (`.trap`), when the dump holds the bytes.
fn fault_context(
    session: &ntdbg_engine::Session,
    d: &DecodedBugcheck,
) -> Option<minidump::MinidumpContext> {
    use ntdbg_engine::registers::{context_from_bytes, context_size};
    use ntdbg_targets::context::{context_from_trap_frame, KTRAP_FRAME_AMD64_SIZE};
    let arch = session.arch();
    let target = session.target();
    let from_record = || {
        let bytes = target.read_exact(d.context_record?, context_size(arch))?;
        context_from_bytes(arch, &bytes)
    };
    let from_trap = || {
        let bytes = target.read_exact(d.trap_frame?, KTRAP_FRAME_AMD64_SIZE)?;
        context_from_trap_frame(arch, &bytes)
    };
    from_record().or_else(from_trap)
}

/// The stack of the fault itself when the parameters point at its context record or trap
/// frame and the dump holds it (as WinDbg does); else the exception (bugcheck) context's.
fn fault_or_event_stack(
    session: &ntdbg_engine::Session,
    bugcheck: &ntdbg_targets::Bugcheck,
    d: &DecodedBugcheck,
    limitations: &mut Vec<String>,
) -> Vec<ntdbg_engine::stack::Frame> {
    let fault_stack = fault_context(session, d).map(|context| {
        ntdbg_engine::stack::walk(
            session.target(),
            session.symbols(),
            bugcheck.thread_id,
            &context,
        )
    });
    let walked = match fault_stack {
        Some(stack) if !stack.frames.is_empty() => Ok(stack),
        _ => session.event_stack().or_else(|_| session.stack()),
    };
    match walked {
        Ok(stack) => {
            if let Some(note) = &stack.note {
                limitations.push(note.clone());
            }
            stack.frames
        }
        Err(err) => {
            limitations.push(err.to_string());
            Vec::new()
        }
    }
}

/// The driver a kernel stack blames, as `!analyze` names it: the caller of `KeBugCheck*` when
/// the kernel's symbols name that frame (manually initiated crashes: the keyboard or NMI
/// driver that asked for it), else the first frame outside the kernel and the HAL. Only
/// trusted frames count; the text says which frame was used.
fn driver_on_stack<'s>(
    session: &'s ntdbg_engine::Session,
    frames: &[ntdbg_engine::stack::Frame],
    config: &crate::signature::SignatureConfig,
) -> Option<(&'s minidump::MinidumpModule, String)> {
    let trusted: Vec<_> = frames.iter().take_while(|f| f.is_trusted()).collect();
    let bugcheck = trusted.iter().position(|f| {
        f.function
            .as_deref()
            .is_some_and(|name| name.starts_with("KeBugCheck"))
    });
    let start = bugcheck.map_or(0, |i| i + 1);
    trusted.iter().skip(start).find_map(|f| {
        let module = session.module_at(f.instruction)?;
        if config.is_system(&module.name) {
            return None;
        }
        let basis = match bugcheck.and_then(|i| trusted.get(i)) {
            Some(caller_of) => format!(
                "frame {:02x} ({}), the caller of {} (frame {:02x}),",
                f.index,
                f.call_site(),
                caller_of
                    .function
                    .as_deref()
                    .map_or("KeBugCheckEx", ntdbg_symbols::strip_parameters),
                caller_of.index
            ),
            None => format!(
                "frame {:02x} ({}), the first trusted frame outside the kernel and the HAL,",
                f.index,
                f.call_site()
            ),
        };
        Some((module, basis))
    })
}

/// The report of a kernel dump: the bugcheck decoded, the faulting module from its parameters
/// (else the driver on the stack, [`driver_on_stack`]), the stack from the exception (trap) context when the
/// dump has one, else the bugcheck thread's own.
pub(crate) fn bugcheck_report(
    session: &ntdbg_engine::Session,
    bugcheck: &ntdbg_targets::Bugcheck,
    dump: crate::report::DumpFacts,
    config: &crate::signature::SignatureConfig,
) -> crate::report::Report {
    use crate::report::{
        frame_limitations, module_facts, stack_entry, EventFacts, Inference, Report, REPORT_FRAMES,
    };
    use crate::signature::build_signature;
    let hex = |v: u64| format!("{v:#x}");
    let d = decode_bugcheck(bugcheck.code, bugcheck.parameters);
    let mut limitations = Vec::new();
    let kind = session.target().kind();
    if matches!(
        kind,
        ntdbg_targets::TargetKind::KernelSmall | ntdbg_targets::TargetKind::KernelTriage
    ) {
        limitations.push(
            "a small memory dump holds only the bugcheck thread's stack and a few data blocks: other memory reads as ??"
                .to_string(),
        );
    }

    let event = EventFacts {
        kind: "bugcheck".into(),
        code: Some(format!("{:#010x}", bugcheck.code)),
        name: Some(d.name.clone()),
        address: d.faulting_address.map(hex),
        thread_id: Some(hex(u64::from(bugcheck.thread_id))),
        parameters: bugcheck.parameters.iter().map(|p| hex(*p)).collect(),
        description: d.description.clone(),
    };

    let frames = if session.arch()
        == ntdbg_targets::Arch::Other(ntdbg_targets::PROCESSOR_ARCHITECTURE_ARM)
    {
        limitations.push(
            "32-bit ARM (ARMNT) dumps are read for their header, bugcheck and driver list only: no stack walk and no disassembly"
                .to_string(),
        );
        Vec::new()
    } else {
        fault_or_event_stack(session, bugcheck, &d, &mut limitations)
    };
    limitations.extend(frame_limitations(session, &frames));

    let from_params = d
        .faulting_address
        .and_then(|a| session.module_at(a))
        .map(|m| {
            (
                m,
                "the faulting address in the bugcheck parameters".to_string(),
            )
        });
    let (faulting, basis) = from_params
        .or_else(|| driver_on_stack(session, &frames, config))
        .unzip();
    let basis = basis.unwrap_or_default();
    let faulting_module = faulting.map(module_facts);

    let process = session
        .target()
        .as_kernel_dump()
        .and_then(|k| k.current_process_name());
    let mut inferences = Vec::new();
    if let Some(m) = &faulting_module {
        inferences.push(Inference {
            text: format!("{} is the faulting module", m.name),
            basis: format!(
                "{basis} lies in {} ({}..{}+{})",
                m.name, m.base, m.base, m.size
            ),
            kind: "faulting_module".into(),
        });
    }
    inferences.push(bugcheck_inference(bugcheck, &d, process.as_ref()));
    if matches!(
        bugcheck.code,
        0x7E | 0x1000007E | 0x1E | 0x8E | 0x1000008E | 0x3B
    ) && bugcheck.parameters[0] as u32 == 0xC000_0005
    {
        inferences.push(Inference {
            text: "an access violation in kernel mode was not handled".into(),
            basis: format!(
                "bugcheck {:#x} with exception code 0xc0000005 in parameter 1",
                bugcheck.code
            ),
            kind: "bugcheck".into(),
        });
    }

    let stack: Vec<_> = frames.iter().take(REPORT_FRAMES).map(stack_entry).collect();
    let signature = build_signature(&format!("BUGCHECK_0x{:X}", bugcheck.code), &frames, config);
    let mut next_commands = vec![".bugcheck".to_string()];
    if let Some(a) = d.context_record {
        next_commands.push(format!(".cxr {a:#x}"));
    }
    if let Some(a) = d.exception_record {
        next_commands.push(format!(".exr {a:#x}"));
    }
    if let Some(a) = d.trap_frame {
        next_commands.push(format!(".trap {a:#x}"));
    }
    next_commands.push("kb".into());
    if let Some(m) = &faulting_module {
        next_commands.push(format!("lmv m {}", ntdbg_engine::module_name(&m.name)));
    }
    if let Some(a) = d.faulting_address {
        next_commands.push(format!("u {a:#x}"));
    }
    Report {
        version: crate::report::REPORT_VERSION,
        dump,
        event,
        faulting_module,
        stack,
        signature: signature.text,
        signature_frames: signature.frames,
        // Kernel frames' variables are not reported yet.
        frame_locals: Vec::new(),
        inferences,
        pointed_to: Vec::new(),
        waits: Vec::new(),
        limitations,
        next_commands,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_parameters() {
        assert_eq!(
            bugcheck_name(0x1000007e),
            "SYSTEM_THREAD_EXCEPTION_NOT_HANDLED_M"
        );
        assert_eq!(bugcheck_name(0xD1), "DRIVER_IRQL_NOT_LESS_OR_EQUAL");
        assert_eq!(bugcheck_name(0x12345), "BUGCHECK_0x12345");
        let d = decode_bugcheck(
            0x1000007e,
            [
                0xffffffffc0000005,
                0xfffff8048b58334c,
                0xffff850429891ee8,
                0xffff850429891720,
            ],
        );
        assert_eq!(d.faulting_address, Some(0xfffff8048b58334c));
        assert_eq!(d.context_record, Some(0xffff850429891720));
        assert!(d.description.contains("c0000005"), "{}", d.description);
        for code in [
            0x0A, 0x1E, 0x3B, 0x50, 0x7E, 0x7F, 0x9F, 0xA0, 0xC2, 0xC4, 0xD1, 0xEF, 0x133, 0x139,
            0x1C8, 0x1000007E, 0x1000008E,
        ] {
            let d = decode_bugcheck(code, [0; 4]);
            assert!(!d.name.starts_with("BUGCHECK_"), "{code:#x}");
            let documented = d.arguments.iter().any(|a| !a.is_empty());
            assert_eq!(documented, code != 0x1C8, "{code:#x}");
        }
        // Every name is unique and every code listed once.
        let mut codes: Vec<u32> = BUGCHECK_NAMES.iter().map(|(c, _)| *c).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), BUGCHECK_NAMES.len());
    }
}
