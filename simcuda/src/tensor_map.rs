//! `cuTensorMapEncodeTiled`: the argument checks the CUDA driver documents, for the tensor maps
//! the simulation can run (rank 2, element strides 1, no interleave, zero OOB fill), and the
//! 128 bytes written: `ptxsim::TensorMap::encode`'s, which the interpreter's
//! `cp.async.bulk.tensor` reads. The global address is taken as it is: the simulated driver's
//! device addresses are the interpreter's.
//!
//! Refusals: what the driver documents as invalid is `CUDA_ERROR_INVALID_VALUE`; what it accepts
//! but the simulation does not model is `CUDA_ERROR_NOT_SUPPORTED` (ranks other than 2, element
//! strides other than 1, interleaved layouts at rank 3 and up, the sub-byte data types and
//! swizzle atoms of CUDA 12.8, the NaN OOB fill, a box row narrower than its swizzle, and row
//! strides shorter than a row).

use crate::driver::{code, Res};
use ptxsim::{OobFill, Swizzle, TensorMap};

/// The arguments of a rank-2 `cuTensorMapEncodeTiled`, read from the caller's arrays.
#[derive(Debug, Clone, Copy)]
pub struct Tiled {
    /// `CUtensorMapDataType`.
    pub data_type: u32,
    pub rank: u32,
    pub address: u64,
    pub dims: [u64; 2],
    pub strides: [u64; 1],
    pub box_dims: [u32; 2],
    pub element_strides: [u32; 2],
    /// `CUtensorMapInterleave`.
    pub interleave: u32,
    /// `CUtensorMapSwizzle`.
    pub swizzle: u32,
    /// `CUtensorMapL2promotion` (a hint: checked, not modelled).
    pub l2_promotion: u32,
    /// `CUtensorMapFloatOOBfill`.
    pub oob_fill: u32,
}

/// The rank check, before the caller's arrays (of `rank` or `rank - 1` entries) are read:
/// 1..=5 is a rank the driver takes, only 2 is simulated.
pub fn check_rank(rank: u32) -> Res {
    match rank {
        2 => Ok(()),
        1..=5 => Err(code::NOT_SUPPORTED),
        _ => Err(code::INVALID_VALUE),
    }
}

/// Bytes per element of a `CUtensorMapDataType`, and whether it is a float type.
fn element(data_type: u32) -> Res<(u32, bool)> {
    Ok(match data_type {
        0 => (1, false),                            // UINT8
        1 => (2, false),                            // UINT16
        2 | 3 => (4, false),                        // UINT32, INT32
        4 | 5 => (8, false),                        // UINT64, INT64
        6 | 9 => (2, true),                         // FLOAT16, BFLOAT16
        7 | 10..=12 => (4, true),                   // FLOAT32, FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ
        8 => (8, true),                             // FLOAT64
        13..=15 => return Err(code::NOT_SUPPORTED), // 16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B
        _ => return Err(code::INVALID_VALUE),
    })
}

impl Tiled {
    /// Checks the arguments as the driver does and makes the map.
    pub fn encode(&self) -> Res<TensorMap> {
        check_rank(self.rank)?;
        let (elem_bytes, float) = element(self.data_type)?;
        // Interleaved layouts need rank 3 or more.
        if self.interleave != 0 {
            return Err(code::INVALID_VALUE);
        }
        if !self.address.is_multiple_of(16) {
            return Err(code::INVALID_VALUE);
        }
        if self.dims.iter().any(|&d| d == 0 || d > 1 << 32) {
            return Err(code::INVALID_VALUE);
        }
        let stride = self.strides[0];
        if !stride.is_multiple_of(16) || stride >= 1 << 40 {
            return Err(code::INVALID_VALUE);
        }
        if self.box_dims.iter().any(|&d| d == 0 || d > 256) {
            return Err(code::INVALID_VALUE);
        }
        if self.element_strides.iter().any(|&s| s == 0 || s > 8) {
            return Err(code::INVALID_VALUE);
        }
        if self.element_strides.iter().any(|&s| s != 1) {
            return Err(code::NOT_SUPPORTED);
        }
        let inner = self.box_dims[0] * elem_bytes;
        if !inner.is_multiple_of(16) {
            return Err(code::INVALID_VALUE);
        }
        let swizzle = match self.swizzle {
            0 => Swizzle::None,
            1 => Swizzle::B32,
            2 => Swizzle::B64,
            3 => Swizzle::B128,
            4..=6 => return Err(code::NOT_SUPPORTED), // the 128-byte swizzle's atoms (12.8)
            _ => return Err(code::INVALID_VALUE),
        };
        if swizzle != Swizzle::None {
            if inner > swizzle.bytes() {
                return Err(code::INVALID_VALUE);
            }
            if inner < swizzle.bytes() {
                return Err(code::NOT_SUPPORTED);
            }
        }
        if self.l2_promotion > 3 {
            return Err(code::INVALID_VALUE);
        }
        match (self.oob_fill, float) {
            (0, _) => {}
            (1, true) => return Err(code::NOT_SUPPORTED),
            _ => return Err(code::INVALID_VALUE),
        }
        if stride < self.dims[0] * u64::from(elem_bytes) {
            return Err(code::NOT_SUPPORTED);
        }
        let map = TensorMap {
            base: self.address,
            elem_bytes,
            dims: self.dims,
            strides_bytes: self.strides,
            box_dims: self.box_dims,
            swizzle,
            oob_fill: OobFill::Zero,
        };
        // Everything ptxsim checks was checked above; a disagreement is this module's bug.
        map.validate()
            .unwrap_or_else(|e| panic!("simcuda accepted a tensor map ptxsim refuses: {e}"));
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 100 x 300 bf16 tensor (rows padded to 256 bytes), 64 x 64 boxes, 128-byte swizzle.
    const GOOD: Tiled = Tiled {
        data_type: 9,
        rank: 2,
        address: 0x7f00_0000_1000,
        dims: [100, 300],
        strides: [256],
        box_dims: [64, 64],
        element_strides: [1, 1],
        interleave: 0,
        swizzle: 3,
        l2_promotion: 2,
        oob_fill: 0,
    };

    #[test]
    fn a_good_map_decodes_to_its_fields() {
        let map = GOOD.encode().unwrap();
        let back = TensorMap::decode(&map.encode()).unwrap();
        assert_eq!(back, map);
        assert_eq!(back.base, GOOD.address);
        assert_eq!(back.elem_bytes, 2);
        assert_eq!(back.dims, [100, 300]);
        assert_eq!(back.strides_bytes, [256]);
        assert_eq!(back.box_dims, [64, 64]);
        assert_eq!(back.swizzle, Swizzle::B128);
        assert_eq!(back.oob_fill, OobFill::Zero);
        // Every data type's element size, each swizzle with a box row of its width.
        for (data_type, bytes) in [(0, 1), (1, 2), (3, 4), (4, 8), (6, 2), (7, 4), (8, 8)] {
            for (swizzle, width) in [(0, 64), (1, 32), (2, 64), (3, 128)] {
                let t = Tiled {
                    data_type,
                    box_dims: [width / bytes, 8],
                    dims: [256 / bytes as u64, 300],
                    swizzle,
                    ..GOOD
                };
                let map = t.encode().unwrap_or_else(|c| panic!("{t:?}: {c}"));
                assert_eq!(map.elem_bytes, bytes);
                assert_eq!(map.swizzle.bytes(), if swizzle == 0 { 0 } else { width });
                assert_eq!(TensorMap::decode(&map.encode()).unwrap(), map);
            }
        }
    }

    #[test]
    fn each_refusal_has_the_drivers_code() {
        use code::{INVALID_VALUE as INVALID, NOT_SUPPORTED as UNSUPPORTED};
        let cases: &[(&str, Tiled, u32)] = &[
            ("rank 0", Tiled { rank: 0, ..GOOD }, INVALID),
            ("rank 6", Tiled { rank: 6, ..GOOD }, INVALID),
            ("rank 1", Tiled { rank: 1, ..GOOD }, UNSUPPORTED),
            ("rank 3", Tiled { rank: 3, ..GOOD }, UNSUPPORTED),
            (
                "data type 16",
                Tiled {
                    data_type: 16,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "sub-byte type",
                Tiled {
                    data_type: 13,
                    ..GOOD
                },
                UNSUPPORTED,
            ),
            (
                "interleave 32B at rank 2",
                Tiled {
                    interleave: 2,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "interleave 3",
                Tiled {
                    interleave: 3,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "address 8-byte aligned",
                Tiled {
                    address: GOOD.address + 8,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "dim 0",
                Tiled {
                    dims: [100, 0],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "dim 2^32 + 1",
                Tiled {
                    dims: [100, (1 << 32) + 1],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "stride 264",
                Tiled {
                    strides: [264],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "stride 2^40",
                Tiled {
                    strides: [1 << 40],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "stride under a row",
                Tiled {
                    strides: [192],
                    ..GOOD
                },
                UNSUPPORTED,
            ),
            (
                "box 0",
                Tiled {
                    box_dims: [64, 0],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "box 257",
                Tiled {
                    box_dims: [64, 257],
                    swizzle: 0,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "element stride 0",
                Tiled {
                    element_strides: [1, 0],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "element stride 9",
                Tiled {
                    element_strides: [9, 1],
                    ..GOOD
                },
                INVALID,
            ),
            (
                "element stride 2",
                Tiled {
                    element_strides: [1, 2],
                    ..GOOD
                },
                UNSUPPORTED,
            ),
            (
                "inner box 24 bytes",
                Tiled {
                    box_dims: [12, 64],
                    swizzle: 0,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "inner box over the swizzle",
                Tiled { swizzle: 2, ..GOOD },
                INVALID,
            ),
            (
                "inner box under the swizzle",
                Tiled {
                    box_dims: [32, 64],
                    ..GOOD
                },
                UNSUPPORTED,
            ),
            (
                "swizzle atom (12.8)",
                Tiled { swizzle: 4, ..GOOD },
                UNSUPPORTED,
            ),
            ("swizzle 7", Tiled { swizzle: 7, ..GOOD }, INVALID),
            (
                "L2 promotion 4",
                Tiled {
                    l2_promotion: 4,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "NaN fill",
                Tiled {
                    oob_fill: 1,
                    ..GOOD
                },
                UNSUPPORTED,
            ),
            (
                "NaN fill of integers",
                Tiled {
                    oob_fill: 1,
                    data_type: 1,
                    ..GOOD
                },
                INVALID,
            ),
            (
                "OOB fill 2",
                Tiled {
                    oob_fill: 2,
                    ..GOOD
                },
                INVALID,
            ),
        ];
        for (what, t, want) in cases {
            assert_eq!(t.encode().err(), Some(*want), "{what}");
        }
    }

    /// Through the exported entry point: the caller's arrays, a device allocation's address,
    /// the 128 bytes written; null and misaligned pointers refused.
    #[test]
    fn the_entry_point_encodes_a_device_allocation() {
        use crate::*;
        use std::ffi::c_void;
        #[repr(C, align(64))]
        struct CuTensorMap([u8; 128]);

        assert_eq!(cuInit(0), code::SUCCESS);
        let mut ctx = std::ptr::null_mut();
        let mut dptr = 0u64;
        unsafe {
            assert_eq!(cuDevicePrimaryCtxRetain(&mut ctx, 0), code::SUCCESS);
            assert_eq!(cuCtxSetCurrent(ctx), code::SUCCESS);
            assert_eq!(cuMemAlloc_v2(&mut dptr, 64 * 256), code::SUCCESS);
        }
        let dims = [100u64, 64];
        let strides = [256u64];
        let boxes = [64u32, 32];
        let estrides = [1u32, 1];
        let mut out = CuTensorMap([0xAA; 128]);
        let encode = |out: *mut CuTensorMap, addr: u64, rank: u32, dims: *const u64| unsafe {
            cuTensorMapEncodeTiled(
                out as *mut c_void,
                9,
                rank,
                addr as *mut c_void,
                dims,
                strides.as_ptr(),
                boxes.as_ptr(),
                estrides.as_ptr(),
                0,
                3,
                0,
                0,
            )
        };
        assert_eq!(encode(&mut out, dptr, 2, dims.as_ptr()), code::SUCCESS);
        let map = TensorMap::decode(&out.0).unwrap();
        assert_eq!(map.base, dptr);
        assert_eq!(map.dims, [100, 64]);
        assert_eq!(map.box_dims, [64, 32]);
        assert_eq!(map.swizzle, Swizzle::B128);
        assert_eq!(
            encode(std::ptr::null_mut(), dptr, 2, dims.as_ptr()),
            code::INVALID_VALUE
        );
        let misaligned = unsafe { (out.0.as_mut_ptr().add(16)) as *mut CuTensorMap };
        assert_eq!(
            encode(misaligned, dptr, 2, dims.as_ptr()),
            code::INVALID_VALUE
        );
        assert_eq!(
            encode(&mut out, dptr, 2, std::ptr::null()),
            code::INVALID_VALUE
        );
        assert_eq!(
            encode(&mut out, dptr + 4, 2, dims.as_ptr()),
            code::INVALID_VALUE
        );
        // A rank the driver takes but the simulation does not: its arrays are never read.
        assert_eq!(
            encode(&mut out, dptr, 3, std::ptr::null()),
            code::NOT_SUPPORTED
        );
        // A refused call leaves the map as it was.
        assert_eq!(TensorMap::decode(&out.0).unwrap(), map);
        assert_eq!(cuMemFree_v2(dptr), code::SUCCESS);
    }
}
