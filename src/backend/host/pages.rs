//! The memory of the arena's blocks ([`super::arena`]): from 4 MiB up (the arena's own blocks),
//! mapped from the OS at 2 MiB alignment, so a block can grow without its pages being touched
//! again.
//!
//! On a VM whose guest memory is backed only as it is first touched, placing a page costs far
//! more than writing it: on this project's 2-vCPU VM (2026-12-07) about 0.5 GB/s over both
//! vCPUs, against 20 GB/s and more for writing values. A default host run's STREAM arrays (three
//! of 4 × the last-level cache) are placed once, and the GEMM batch sweep's rotating copies of B
//! (a whole number of weights, a little past the same size) used to need a block of their own,
//! placed anew. [`Pages::grow`] moves an idle block's page tables to a larger range instead
//! (Linux's `mremap`): nothing is copied, and only the part past the old end is new.
//!
//! Elsewhere, and below 4 MiB (a case's own small arrays), the memory comes from the global
//! allocator and never grows ([`GROWS`] says which, for a forecast's simulated arena).

use super::pool::{array_alignment, HUGE_PAGES_FROM};
use std::alloc::Layout;
use std::ptr::NonNull;

/// Whether a block of [`HUGE_PAGES_FROM`] or more grows in place of a new one on this OS.
pub const GROWS: bool = cfg!(target_os = "linux");

/// Memory of a block: `bytes` at [`array_alignment`], writable, not yet touched when new.
pub struct Pages {
    ptr: NonNull<u8>,
    bytes: usize,
    /// Mapped by [`map`] (whole 4 KiB pages at 2 MiB alignment); else from the allocator.
    mapped: bool,
}

impl Pages {
    /// `bytes` (at least 1) at their alignment, or `None` when the memory cannot be had.
    pub fn new(bytes: usize) -> Option<Pages> {
        let bytes = bytes.max(1);
        if GROWS && bytes >= HUGE_PAGES_FROM && bytes.is_multiple_of(4096) {
            if let Some(ptr) = map(bytes, true) {
                return Some(Pages {
                    ptr,
                    bytes,
                    mapped: true,
                });
            }
        }
        let layout = Layout::from_size_align(bytes, array_alignment(bytes)).ok()?;
        // SAFETY: the layout's size is not zero.
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) })?;
        Some(Pages {
            ptr,
            bytes,
            mapped: false,
        })
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Makes the memory `bytes` long (a multiple of 4 KiB), at 2 MiB alignment still, keeping
    /// the pages it has with their values and their backing: their page tables are moved,
    /// nothing is copied. The part past the old end is new, untouched. Whether it grew; where
    /// it did not (another OS, memory from the allocator, the OS refused), it is as it was.
    ///
    /// The memory must be writable (no guard on it): its protection goes with it.
    pub fn grow(&mut self, bytes: usize) -> bool {
        if bytes <= self.bytes {
            return true;
        }
        if !self.mapped || !bytes.is_multiple_of(4096) {
            return false;
        }
        match remap(self.ptr, self.bytes, bytes) {
            Some(ptr) => {
                self.ptr = ptr;
                self.bytes = bytes;
                true
            }
            None => false,
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        if self.mapped {
            unmap(self.ptr.as_ptr(), self.bytes);
        } else {
            let layout = Layout::from_size_align(self.bytes, array_alignment(self.bytes))
                .expect("the layout it was allocated with");
            // SAFETY: allocated with this layout in `Pages::new`.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

/// `bytes` (whole 4 KiB pages) of anonymous memory at 2 MiB alignment, `writable` or not to be
/// touched at all (a reservation): a mapping of `bytes` + 2 MiB, trimmed at both ends.
#[cfg(target_os = "linux")]
fn map(bytes: usize, writable: bool) -> Option<NonNull<u8>> {
    use super::pool::HUGE_PAGE;
    let len = bytes.checked_add(HUGE_PAGE)?;
    let prot = match writable {
        true => libc::PROT_READ | libc::PROT_WRITE,
        false => libc::PROT_NONE,
    };
    // SAFETY: a new anonymous private mapping, at an address the kernel chooses.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let base = raw as usize;
    let start = base.next_multiple_of(HUGE_PAGE);
    let end = start + bytes;
    // (both ends lie inside the mapping, on 4 KiB pages: mmap's base is page-aligned, as are
    // HUGE_PAGE and `bytes`)
    if start > base {
        unmap(base as *mut u8, start - base);
    }
    if base + len > end {
        unmap(end as *mut u8, base + len - end);
    }
    NonNull::new(start as *mut u8)
}

#[cfg(not(target_os = "linux"))]
fn map(_bytes: usize, _writable: bool) -> Option<NonNull<u8>> {
    None
}

/// The mapping at `ptr` of `old` bytes, moved to a new 2 MiB-aligned range of `new` bytes:
/// a range reserved first (no access), and the old pages moved over it (`MREMAP_FIXED`
/// replaces the reservation). `None` (the old mapping as it was) if either step fails.
#[cfg(target_os = "linux")]
fn remap(ptr: NonNull<u8>, old: usize, new: usize) -> Option<NonNull<u8>> {
    let dest = map(new, false)?;
    // SAFETY: `ptr` maps `old` bytes of ours and nothing else refers to them now; `dest` is a
    // reservation of `new` bytes of ours, which the move replaces.
    let moved = unsafe {
        libc::mremap(
            ptr.as_ptr().cast(),
            old,
            new,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            dest.as_ptr().cast::<libc::c_void>(),
        )
    };
    if moved == libc::MAP_FAILED {
        unmap(dest.as_ptr(), new);
        return None;
    }
    NonNull::new(moved.cast())
}

#[cfg(not(target_os = "linux"))]
fn remap(_ptr: NonNull<u8>, _old: usize, _new: usize) -> Option<NonNull<u8>> {
    None
}

#[cfg(target_os = "linux")]
fn unmap(ptr: *mut u8, bytes: usize) {
    // SAFETY: called only on ranges of our own mappings, which nothing refers to afterwards.
    let done = unsafe { libc::munmap(ptr.cast(), bytes) } == 0;
    debug_assert!(done, "munmap of {bytes} bytes failed");
}

#[cfg(not(target_os = "linux"))]
fn unmap(_ptr: *mut u8, _bytes: usize) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::host::pool::HUGE_PAGE;

    /// A block keeps its values where it grows, and its new part reads as zeros; it stays at
    /// 2 MiB alignment. Memory from the allocator (below 4 MiB) grows only to a size it has.
    #[test]
    fn a_block_grows_keeping_its_values() {
        let mut pages = Pages::new(4 << 20).unwrap();
        assert_eq!(pages.ptr() as usize % HUGE_PAGE, 0);
        let words = |p: &Pages, n: usize| {
            // SAFETY: the block's own bytes, written below before they are read (or new: zero).
            unsafe { std::slice::from_raw_parts_mut(p.ptr().cast::<u64>(), n / 8) }
        };
        for (i, w) in words(&pages, 4 << 20).iter_mut().enumerate() {
            *w = i as u64 * 7 + 1;
        }
        assert!(pages.grow(3 << 20), "a size it has");
        if GROWS {
            assert!(pages.grow(10 << 20));
            assert_eq!(pages.bytes(), 10 << 20);
            assert_eq!(pages.ptr() as usize % HUGE_PAGE, 0);
            let all = words(&pages, 10 << 20);
            let old = (4 << 20) / 8;
            assert!(all[..old]
                .iter()
                .enumerate()
                .all(|(i, &w)| w == i as u64 * 7 + 1));
            assert!(all[old..].iter().all(|&w| w == 0));
            all[all.len() - 1] = 5; // writable to the end
        } else {
            assert!(!pages.grow(10 << 20));
            assert_eq!(pages.bytes(), 4 << 20);
        }
        for bytes in [100_000, 2 << 20] {
            let mut small = Pages::new(bytes).unwrap();
            assert!(
                !small.grow(3 << 20),
                "memory from the allocator does not grow"
            );
            assert_eq!(small.bytes(), bytes);
        }
    }
}
