//! ptxsim's own encoding of a TMA tensor map (the 128-byte `CUtensorMap` that
//! `cp.async.bulk.tensor` reads). NVIDIA's encoding is opaque; a test builds a [`TensorMap`],
//! passes [`TensorMap::encode`]'s bytes as the kernel's `.param .align 64 .b8 tmap[128]` (or
//! stores them in global memory), and the interpreter decodes them, refusing 128 bytes that
//! this encoder did not make.

/// The shared-memory swizzle of a tensor copy (`CU_TENSOR_MAP_SWIZZLE_*`): the 16-byte chunk
/// index of each shared address XORed with its bits 7.. (CUTLASS `Swizzle<1|2|3,4,3>`), the
/// same modes as wgmma's matrix descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swizzle {
    None,
    B32,
    B64,
    B128,
}

impl Swizzle {
    /// The swizzle width in bytes (0 for none).
    pub fn bytes(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 32,
            Swizzle::B64 => 64,
            Swizzle::B128 => 128,
        }
    }

    /// Applies the swizzle to an absolute shared address.
    pub fn apply(self, addr: u64) -> u64 {
        let mask = match self {
            Swizzle::None => return addr,
            Swizzle::B32 => 1,
            Swizzle::B64 => 3,
            Swizzle::B128 => 7,
        };
        addr ^ (((addr >> 7) & mask) << 4)
    }
}

/// What fills the elements of a box outside the tensor (`CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE`:
/// zeros, the only mode modelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OobFill {
    Zero,
}

/// A 2-D tiled tensor map (`cuTensorMapEncodeTiled` with rank 2, element strides 1,
/// interleave none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorMap {
    /// Global address of element (0, 0); 16-byte aligned.
    pub base: u64,
    /// Bytes per element: 1, 2, 4 or 8.
    pub elem_bytes: u32,
    /// Tensor extent in elements, innermost first.
    pub dims: [u64; 2],
    /// Bytes from one row (dimension 1) to the next: a multiple of 16, at least a row.
    pub strides_bytes: [u64; 1],
    /// The box copied per instruction, in elements, innermost first (each 1..=256; the inner
    /// extent a multiple of 16 bytes, and exactly the swizzle width when swizzled).
    pub box_dims: [u32; 2],
    pub swizzle: Swizzle,
    pub oob_fill: OobFill,
}

const MAGIC: &[u8; 8] = b"PTXSIMTM";
const VERSION: u32 = 1;

impl TensorMap {
    /// The 128 bytes the kernel receives.
    pub fn encode(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&2u32.to_le_bytes());
        b[16..24].copy_from_slice(&self.base.to_le_bytes());
        b[24..28].copy_from_slice(&self.elem_bytes.to_le_bytes());
        b[28..32].copy_from_slice(&self.swizzle.bytes().to_le_bytes());
        b[32..40].copy_from_slice(&self.dims[0].to_le_bytes());
        b[40..48].copy_from_slice(&self.dims[1].to_le_bytes());
        b[48..56].copy_from_slice(&self.strides_bytes[0].to_le_bytes());
        b[56..60].copy_from_slice(&self.box_dims[0].to_le_bytes());
        b[60..64].copy_from_slice(&self.box_dims[1].to_le_bytes());
        b
    }

    /// Decodes and validates what [`TensorMap::encode`] made; `Err` says what is wrong.
    pub fn decode(b: &[u8; 128]) -> Result<TensorMap, String> {
        if &b[0..8] != MAGIC {
            return Err("not a tensor map made by ptxsim::TensorMap::encode (bad magic word): ptxsim cannot read NVIDIA's opaque encoding".into());
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        if u32_at(8) != VERSION || u32_at(12) != 2 {
            return Err(format!(
                "tensor map version {} rank {}: ptxsim knows version {VERSION}, rank 2",
                u32_at(8),
                u32_at(12)
            ));
        }
        let swizzle = match u32_at(28) {
            0 => Swizzle::None,
            32 => Swizzle::B32,
            64 => Swizzle::B64,
            128 => Swizzle::B128,
            s => return Err(format!("tensor map swizzle {s}")),
        };
        let m = TensorMap {
            base: u64_at(16),
            elem_bytes: u32_at(24),
            dims: [u64_at(32), u64_at(40)],
            strides_bytes: [u64_at(48)],
            box_dims: [u32_at(56), u32_at(60)],
            swizzle,
            oob_fill: OobFill::Zero,
        };
        m.validate()?;
        Ok(m)
    }

    /// The rules of `cuTensorMapEncodeTiled` that ptxsim checks.
    pub fn validate(&self) -> Result<(), String> {
        if !matches!(self.elem_bytes, 1 | 2 | 4 | 8) {
            return Err(format!("element size {} bytes", self.elem_bytes));
        }
        if !self.base.is_multiple_of(16) {
            return Err(format!("base {:#x} is not 16-byte aligned", self.base));
        }
        if self.dims.iter().any(|&d| d == 0 || d > 1 << 32) {
            return Err(format!("dims {:?}: each 1..=2^32", self.dims));
        }
        let row = self.dims[0] * self.elem_bytes as u64;
        let stride = self.strides_bytes[0];
        if !stride.is_multiple_of(16) || stride < row || stride >= 1 << 40 {
            return Err(format!(
                "row stride {stride} bytes: a multiple of 16, at least a row ({row} bytes), below 2^40"
            ));
        }
        if self.box_dims.iter().any(|&d| d == 0 || d > 256) {
            return Err(format!("box {:?}: each 1..=256", self.box_dims));
        }
        let inner = self.box_dims[0] * self.elem_bytes;
        if !inner.is_multiple_of(16) {
            return Err(format!(
                "the box's inner extent is {inner} bytes, not a multiple of 16"
            ));
        }
        if self.swizzle != Swizzle::None && inner != self.swizzle.bytes() {
            return Err(format!(
                "the box's inner extent is {inner} bytes, but a {}-byte swizzle needs rows of exactly {0} bytes",
                self.swizzle.bytes()
            ));
        }
        Ok(())
    }

    /// Bytes one box fills in shared memory (the transaction count of one copy).
    pub fn box_bytes(&self) -> u64 {
        self.box_dims[0] as u64 * self.box_dims[1] as u64 * self.elem_bytes as u64
    }

    /// The alignment the shared destination needs: the swizzle atom (8 rows of the swizzle
    /// width), or 128 bytes unswizzled.
    pub fn dst_align(&self) -> u64 {
        match self.swizzle {
            Swizzle::None => 128,
            s => 8 * s.bytes() as u64,
        }
    }
}
