//! `SIGBUS` from a mapped file turned into a page of zeros.
//!
//! Touching a page of a file mapping past the file's current end (it was truncated after it
//! was mapped) or whose storage fails raises `SIGBUS`, which kills the process. Every
//! [`crate::FileMap`] registers its address range here; the handler installed on first
//! registration looks the faulting address up, maps an anonymous zero page over the faulting
//! page of a registered range (the access is then retried and reads zeros) and counts the
//! fault against that range, which [`crate::FileMap::check`] reports. A fault anywhere else is
//! passed to the handler that was installed before (the Rust runtime's, which tells a stack
//! overflow apart), or gets the default action: the process dies as it would have.
//!
//! The same technique (a zero page over the bad page) is used by EFL's `eina_mmap` and
//! Sapling's indexed log. The handler touches only atomics, a fixed table and `mmap`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// Most mappings registered at once; past it a mapping is refused (the caller reads
/// instead).
const SLOTS: usize = 16_384;

/// One registered range. `version` is a sequence lock: odd while the range is being
/// written, so the handler never pairs one range's start with another's end.
struct Slot {
    version: AtomicUsize,
    start: AtomicUsize,
    end: AtomicUsize,
    faults: AtomicUsize,
}

impl Slot {
    const fn free() -> Slot {
        Slot {
            version: AtomicUsize::new(0),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            faults: AtomicUsize::new(0),
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::free() }; SLOTS];
/// One past the highest slot ever used: the handler looks no further.
static HIGH: AtomicUsize = AtomicUsize::new(0);
/// The page size, read once when the handler is installed.
static PAGE: AtomicUsize = AtomicUsize::new(0);
/// The `SIGBUS` action in place before ours.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();
static INSTALL: Once = Once::new();

/// A range registered with the handler, unregistered on drop (before its mapping goes).
#[derive(Debug)]
pub(crate) struct Registration(usize);

impl Registration {
    /// Faults turned into zero pages in this range.
    pub(crate) fn faults(&self) -> usize {
        TABLE[self.0].faults.load(Ordering::Acquire)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let slot = &TABLE[self.0];
        let v = slot.version.fetch_add(1, Ordering::AcqRel); // odd: busy
        slot.start.store(0, Ordering::Release);
        slot.end.store(0, Ordering::Release);
        slot.faults.store(0, Ordering::Release);
        // Even again, and +2 from a free slot's even value: free. A free slot has end 0.
        slot.version.store(v + 2, Ordering::Release);
    }
}

/// Registers `start..start + len`; `None` when the table is full or the handler could not
/// be installed.
pub(crate) fn register(start: usize, len: usize) -> Option<Registration> {
    if !install() {
        return None;
    }
    let end = start.checked_add(len)?;
    for (index, slot) in TABLE.iter().enumerate() {
        let v = slot.version.load(Ordering::Acquire);
        // A free slot: even version and no range. Claim it by making the version odd.
        if v % 2 == 1 || slot.end.load(Ordering::Acquire) != 0 {
            continue;
        }
        if slot
            .version
            .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        slot.faults.store(0, Ordering::Release);
        slot.start.store(start, Ordering::Release);
        slot.end.store(end, Ordering::Release);
        slot.version.store(v + 2, Ordering::Release);
        HIGH.fetch_max(index + 1, Ordering::AcqRel);
        return Some(Registration(index));
    }
    None
}

/// A slot's range and fault count, read consistently; `None` when free or being written.
fn read_slot(slot: &Slot) -> Option<(usize, usize, usize)> {
    let before = slot.version.load(Ordering::Acquire);
    if before % 2 == 1 {
        return None;
    }
    let start = slot.start.load(Ordering::Acquire);
    let end = slot.end.load(Ordering::Acquire);
    let faults = slot.faults.load(Ordering::Acquire);
    (slot.version.load(Ordering::Acquire) == before && end != 0).then_some((start, end, faults))
}

/// Installs the handler once; whether it is in place.
fn install() -> bool {
    INSTALL.call_once(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let Ok(page) = usize::try_from(page) else {
            return;
        };
        if !page.is_power_of_two() {
            return;
        }
        PAGE.store(page, Ordering::Release);
        // SAFETY: zeroed `sigaction` structs are valid empty actions; sigaction() reads the
        // current action into `previous` and then installs ours, whose handler has the
        // SA_SIGINFO signature.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                return;
            }
            let _ = PREVIOUS.set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
                PAGE.store(0, Ordering::Release);
            }
        }
    });
    PAGE.load(Ordering::Acquire) != 0
}

/// The handler: a zero page over a registered range's faulting page, else the previous
/// action.
extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler.
    let address = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Acquire);
    let slot = TABLE[..HIGH.load(Ordering::Acquire).min(SLOTS)]
        .iter()
        .find(|slot| read_slot(slot).is_some_and(|(s, e, _)| s <= address && address < e));
    if let Some(slot) = slot {
        let base = address & !(page - 1);
        // SAFETY: the page lies in a registered mapping that the faulting thread is reading
        // (so it is still mapped, and ours); MAP_FIXED replaces that one page with an
        // anonymous read-only zero page. mmap is a plain system call, safe in a handler.
        let patched = unsafe {
            libc::mmap(
                base as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANON | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if patched != libc::MAP_FAILED {
            slot.faults.fetch_add(1, Ordering::AcqRel);
            return;
        }
    }
    forward(signal, info, context);
}

/// Hands a fault that is not ours to the action installed before ours; with none, restores
/// the default action, so that the retried access ends the process as it would have.
fn forward(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let previous = PREVIOUS.get();
    let handler = previous.map_or(libc::SIG_DFL, |p| p.sa_sigaction);
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // SAFETY: a zeroed action with SIG_DFL (0) is the default action.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(signal, &default, std::ptr::null_mut());
        }
        return;
    }
    let siginfo = previous.is_some_and(|p| p.sa_flags & libc::SA_SIGINFO != 0);
    // SAFETY: `handler` is the function the previous action installed, with the signature
    // its SA_SIGINFO flag says.
    unsafe {
        if siginfo {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(handler);
            f(signal, info, context);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
            f(signal);
        }
    }
}
