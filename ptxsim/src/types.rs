//! PTX scalar types (`.u32`, `.f16x2`, `.e4m3`, ...) and state spaces, with the few facts the
//! decoder and the executor need about each: width in bits, signedness, whether it is a float.

/// A PTX fundamental or packed type, as written after a dot in an instruction or declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ty {
    Pred,
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    Tf32,
    F32,
    F64,
    E4m3,
    E5m2,
    E4m3x2,
    E5m2x2,
}

impl Ty {
    /// Parses a type name without its leading dot (`"u32"`), or `None` if it is not a type.
    pub fn from_name(name: &str) -> Option<Ty> {
        Some(match name {
            "pred" => Ty::Pred,
            "b8" => Ty::B8,
            "b16" => Ty::B16,
            "b32" => Ty::B32,
            "b64" => Ty::B64,
            "b128" => Ty::B128,
            "u8" => Ty::U8,
            "u16" => Ty::U16,
            "u32" => Ty::U32,
            "u64" => Ty::U64,
            "s8" => Ty::S8,
            "s16" => Ty::S16,
            "s32" => Ty::S32,
            "s64" => Ty::S64,
            "f16" => Ty::F16,
            "f16x2" => Ty::F16x2,
            "bf16" => Ty::Bf16,
            "bf16x2" => Ty::Bf16x2,
            "tf32" => Ty::Tf32,
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "e4m3" => Ty::E4m3,
            "e5m2" => Ty::E5m2,
            "e4m3x2" => Ty::E4m3x2,
            "e5m2x2" => Ty::E5m2x2,
            _ => return None,
        })
    }

    /// Width of one value of this type in bits (a predicate counts as 1).
    pub fn bits(self) -> u32 {
        match self {
            Ty::Pred => 1,
            Ty::B8 | Ty::U8 | Ty::S8 | Ty::E4m3 | Ty::E5m2 => 8,
            Ty::B16 | Ty::U16 | Ty::S16 | Ty::F16 | Ty::Bf16 | Ty::E4m3x2 | Ty::E5m2x2 => 16,
            Ty::B32 | Ty::U32 | Ty::S32 | Ty::F32 | Ty::F16x2 | Ty::Bf16x2 | Ty::Tf32 => 32,
            Ty::B64 | Ty::U64 | Ty::S64 | Ty::F64 => 64,
            Ty::B128 => 128,
        }
    }

    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, Ty::S8 | Ty::S16 | Ty::S32 | Ty::S64)
    }

    /// `.bN`, `.uN` and `.sN`: the types integer instructions accept.
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Ty::B8
                | Ty::B16
                | Ty::B32
                | Ty::B64
                | Ty::U8
                | Ty::U16
                | Ty::U32
                | Ty::U64
                | Ty::S8
                | Ty::S16
                | Ty::S32
                | Ty::S64
        )
    }

    pub fn name(self) -> &'static str {
        match self {
            Ty::Pred => "pred",
            Ty::B8 => "b8",
            Ty::B16 => "b16",
            Ty::B32 => "b32",
            Ty::B64 => "b64",
            Ty::B128 => "b128",
            Ty::U8 => "u8",
            Ty::U16 => "u16",
            Ty::U32 => "u32",
            Ty::U64 => "u64",
            Ty::S8 => "s8",
            Ty::S16 => "s16",
            Ty::S32 => "s32",
            Ty::S64 => "s64",
            Ty::F16 => "f16",
            Ty::F16x2 => "f16x2",
            Ty::Bf16 => "bf16",
            Ty::Bf16x2 => "bf16x2",
            Ty::Tf32 => "tf32",
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::E4m3 => "e4m3",
            Ty::E5m2 => "e5m2",
            Ty::E4m3x2 => "e4m3x2",
            Ty::E5m2x2 => "e5m2x2",
        }
    }
}

/// A PTX state space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Space {
    /// No state space named: a generic address, resolved at run time to global, shared or local.
    Generic,
    Global,
    Shared,
    Local,
    Param,
    Const,
}

impl Space {
    pub fn name(self) -> &'static str {
        match self {
            Space::Generic => "generic",
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Param => "param",
            Space::Const => "const",
        }
    }
}
