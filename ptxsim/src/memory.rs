//! Device global memory for the interpreter: allocations at 256-byte-aligned addresses with
//! unmapped gaps between them, so an access one element past the end of an array faults
//! (as an `Error` naming the instruction and address) instead of reading a neighbour.
//!
//! Also the generic-address windows for shared and local memory, and the [`Element`] trait
//! that moves host values in and out as little-endian bytes.

use crate::error::Error;
use crate::race;

/// First global address handed out; far from 0 so a null or small pointer faults.
pub(crate) const GLOBAL_BASE: u64 = 0x7000_0000_0000;
/// Generic-address window of the executing block's shared memory (`cvta.shared`).
pub(crate) const SHARED_WINDOW: u64 = 0x1000_0000_0000;
/// Generic-address window of the executing thread's local memory (`cvta.local`).
pub(crate) const LOCAL_WINDOW: u64 = 0x2000_0000_0000;
/// Generic-address window of the kernel's parameters (`cvta.param`, PTX ISA 7.7).
pub(crate) const PARAM_WINDOW: u64 = 0x3000_0000_0000;
/// Size of each window: anything inside one is classified as that space.
pub(crate) const WINDOW_BYTES: u64 = 1 << 32;
/// Unmapped bytes left after every allocation.
const GUARD_BYTES: u64 = 64 * 1024;
/// What fresh allocations and shared memory are filled with: every f32/f64 read of it is a
/// NaN and every integer -1, so reading memory nobody wrote shows up in results.
pub const POISON_BYTE: u8 = 0xff;

/// A device address returned by [`Memory::alloc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevicePtr(pub u64);

impl DevicePtr {
    pub fn addr(self) -> u64 {
        self.0
    }

    /// The address `bytes` further on.
    pub fn byte_add(self, bytes: u64) -> DevicePtr {
        DevicePtr(self.0 + bytes)
    }
}

/// A host value that can be stored in device memory.
pub trait Element: Copy {
    const BYTES: usize;
    fn write_le(self, out: &mut [u8]);
    fn read_le(bytes: &[u8]) -> Self;
}

macro_rules! element_via_bytes {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn write_le(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            fn read_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("slice length is BYTES"))
            }
        }
    )*};
}
element_via_bytes!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

impl Element for half::f16 {
    const BYTES: usize = 2;
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_bits().to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> Self {
        half::f16::from_bits(u16::read_le(bytes))
    }
}

impl Element for half::bf16 {
    const BYTES: usize = 2;
    fn write_le(self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_bits().to_le_bytes());
    }
    fn read_le(bytes: &[u8]) -> Self {
        half::bf16::from_bits(u16::read_le(bytes))
    }
}

struct Allocation {
    base: u64,
    bytes: Vec<u8>,
    /// The race detector's record of this allocation, made on the first checked access and
    /// kept across launches (records of earlier launches are told apart by their epochs).
    shadow: Option<Box<[race::Entry]>>,
}

/// Global memory of one simulated device.
pub struct Memory {
    allocations: Vec<Allocation>,
    next_base: u64,
    /// The race detector's byte-wise records of words that narrow accesses touched.
    race_split: Vec<[race::Entry; 4]>,
    /// The first barrier epoch of the next launch: epochs keep counting across launches, so
    /// that a record from an earlier launch (which a launch boundary orders) is told apart.
    next_epoch: u32,
}

impl Default for Memory {
    fn default() -> Self {
        Self::new()
    }
}

impl Memory {
    pub fn new() -> Memory {
        Memory {
            allocations: Vec::new(),
            next_base: GLOBAL_BASE,
            race_split: Vec::new(),
            next_epoch: 1,
        }
    }

    /// Allocates `bytes` bytes (256-byte aligned, like `cuMemAlloc`), filled with
    /// [`POISON_BYTE`].
    pub fn alloc(&mut self, bytes: usize) -> DevicePtr {
        let base = self.next_base;
        self.next_base = (base + bytes as u64 + GUARD_BYTES).next_multiple_of(256);
        self.allocations.push(Allocation {
            base,
            bytes: vec![POISON_BYTE; bytes],
            shadow: None,
        });
        DevicePtr(base)
    }

    /// Allocates exactly `data.len()` elements and copies `data` in.
    pub fn alloc_from<T: Element>(&mut self, data: &[T]) -> DevicePtr {
        let ptr = self.alloc(data.len() * T::BYTES);
        self.write(ptr, data)
            .expect("a fresh allocation holds exactly the data");
        ptr
    }

    /// Frees the allocation that starts at `ptr`. Its addresses are never handed out again, so
    /// a later access through a stale pointer faults instead of reaching a new array.
    pub fn free(&mut self, ptr: DevicePtr) -> Result<(), Error> {
        let i = self
            .allocations
            .binary_search_by_key(&ptr.0, |a| a.base)
            .map_err(|_| {
                Error::Memory(format!("{:#x} is not the start of an allocation", ptr.0))
            })?;
        self.allocations.remove(i);
        Ok(())
    }

    /// Bytes held by live allocations.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocations.iter().map(|a| a.bytes.len() as u64).sum()
    }

    /// Copies `data` to device memory at `ptr`.
    pub fn write<T: Element>(&mut self, ptr: DevicePtr, data: &[T]) -> Result<(), Error> {
        let span = self.host_span_mut(ptr.0, data.len() * T::BYTES)?;
        for (chunk, v) in span.chunks_exact_mut(T::BYTES).zip(data) {
            v.write_le(chunk);
        }
        Ok(())
    }

    /// Reads `count` elements from device memory at `ptr`.
    pub fn read<T: Element>(&self, ptr: DevicePtr, count: usize) -> Result<Vec<T>, Error> {
        let (i, off) = self
            .locate(ptr.0, (count * T::BYTES) as u64)
            .ok_or_else(|| host_fault(ptr.0, count * T::BYTES))?;
        let span = &self.allocations[i].bytes[off..off + count * T::BYTES];
        Ok(span.chunks_exact(T::BYTES).map(T::read_le).collect())
    }

    /// Sets `bytes` bytes at `ptr` to `value` (poisoning an output before a launch).
    pub fn fill(&mut self, ptr: DevicePtr, bytes: usize, value: u8) -> Result<(), Error> {
        self.host_span_mut(ptr.0, bytes)?.fill(value);
        Ok(())
    }

    fn host_span_mut(&mut self, addr: u64, len: usize) -> Result<&mut [u8], Error> {
        let (i, off) = self
            .locate(addr, len as u64)
            .ok_or_else(|| host_fault(addr, len))?;
        Ok(&mut self.allocations[i].bytes[off..off + len])
    }

    /// Finds the allocation holding `[addr, addr + len)` entirely: (index, offset).
    pub(crate) fn locate(&self, addr: u64, len: u64) -> Option<(usize, usize)> {
        let i = self
            .allocations
            .partition_point(|a| a.base <= addr)
            .checked_sub(1)?;
        let a = &self.allocations[i];
        let off = addr - a.base;
        (off.checked_add(len)? <= a.bytes.len() as u64).then_some((i, off as usize))
    }

    /// The bytes of allocation `i` (an index from [`Memory::locate`]).
    pub(crate) fn allocation(&self, i: usize) -> &[u8] {
        &self.allocations[i].bytes
    }

    pub(crate) fn allocation_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.allocations[i].bytes
    }

    /// The race detector's records of allocation `i` (made on first use) and of split words.
    pub(crate) fn race_shadow(
        &mut self,
        i: usize,
    ) -> (&mut [race::Entry], &mut Vec<[race::Entry; 4]>) {
        let a = &mut self.allocations[i];
        let words = a
            .shadow
            .get_or_insert_with(|| race::Entry::fresh_words(a.bytes.len()));
        (words, &mut self.race_split)
    }

    /// The first epoch a launch may use. Once the counter has used half its range, every
    /// record is dropped and it starts over, so a launch always has 2^31 epochs ahead.
    pub(crate) fn launch_epochs(&mut self) -> u32 {
        if self.next_epoch > u32::MAX / 2 {
            for a in &mut self.allocations {
                a.shadow = None;
            }
            self.race_split.clear();
            self.next_epoch = 1;
        }
        self.next_epoch
    }

    /// Records the last epoch a launch used.
    pub(crate) fn end_launch_epochs(&mut self, last: u32) {
        self.next_epoch = last.saturating_add(1);
    }

    /// Base address of allocation `i`.
    pub(crate) fn allocation_base(&self, i: usize) -> u64 {
        self.allocations[i].base
    }

    /// Describes where an access of `len` bytes at `addr` falls, for fault messages.
    pub(crate) fn describe(&self, addr: u64, len: u64) -> String {
        let i = self.allocations.partition_point(|a| a.base <= addr);
        match i.checked_sub(1).map(|i| &self.allocations[i]) {
            Some(a) if addr < a.base + a.bytes.len() as u64 => format!(
                "it starts at byte {} of the {}-byte allocation at {:#x} and runs {} bytes past its end",
                addr - a.base,
                a.bytes.len(),
                a.base,
                addr + len - (a.base + a.bytes.len() as u64)
            ),
            Some(a) if addr < a.base + a.bytes.len() as u64 + GUARD_BYTES => format!(
                "{} bytes past the end of the {}-byte allocation at {:#x}",
                addr - (a.base + a.bytes.len() as u64),
                a.bytes.len(),
                a.base
            ),
            _ => "not inside any allocation".to_string(),
        }
    }
}

fn host_fault(addr: u64, len: usize) -> Error {
    Error::Memory(format!(
        "{len} bytes at {addr:#x} are not inside one allocation"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_poisoned_and_separated() {
        let mut m = Memory::new();
        let a = m.alloc(12);
        let b = m.alloc(4);
        assert_eq!(a.0 % 256, 0);
        assert_eq!(b.0 % 256, 0);
        assert!(b.0 >= a.0 + 12 + GUARD_BYTES);
        assert_eq!(m.read::<u32>(a, 3).unwrap(), vec![u32::MAX; 3]);
        assert!(m.read::<u32>(a, 4).is_err(), "one element past the end");
        assert!(m.locate(a.0 + 12, 1).is_none());
        assert!(m.describe(a.0 + 12, 4).contains("0 bytes past the end"));
        assert!(m.describe(a.0 + 8, 8).contains("runs 4 bytes past its end"));
    }

    #[test]
    fn a_freed_allocation_faults_and_is_never_reused() {
        let mut m = Memory::new();
        let a = m.alloc(64);
        let b = m.alloc(64);
        assert_eq!(m.allocated_bytes(), 128);
        m.free(a).unwrap();
        assert!(m.read::<u32>(a, 1).is_err(), "a stale pointer faults");
        assert!(m.free(a).is_err(), "a double free is an error");
        assert!(
            m.free(b.byte_add(4)).is_err(),
            "not the start of an allocation"
        );
        let c = m.alloc(64);
        assert!(c.0 > b.0, "addresses are not handed out again");
        assert_eq!(m.allocated_bytes(), 128);
    }

    #[test]
    fn round_trips_every_element_type() {
        let mut m = Memory::new();
        let p = m.alloc_from(&[1.5f32, -2.0]);
        assert_eq!(m.read::<f32>(p, 2).unwrap(), vec![1.5, -2.0]);
        let h = m.alloc_from(&[half::f16::from_f32(0.5), half::f16::from_f32(-3.0)]);
        assert_eq!(m.read::<u16>(h, 2).unwrap(), vec![0x3800, 0xc200]);
        m.fill(p, 8, 0).unwrap();
        assert_eq!(m.read::<u64>(p, 1).unwrap(), vec![0]);
    }
}
