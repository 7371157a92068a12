//! The x86-64 vector sets the host's preparation and checks are compiled for again. The build
//! targets plain x86-64, so a loop the compiler would widen runs one element at a time there; a
//! loop that matters (a digest, a generator, a check's count) is compiled twice more with
//! `widened!`, AVX-512 (F, DQ, VL) and AVX2 enabled, and `dispatch!` chooses among the three at
//! run time (`level`). Elsewhere `dispatch!` runs the plain loop.

#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Avx512,
    Avx2,
    Plain,
}

/// The widest set this CPU has, found once.
#[cfg(target_arch = "x86_64")]
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        if is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
        {
            Level::Avx512
        } else if is_x86_feature_detected!("avx2") {
            Level::Avx2
        } else {
            Level::Plain
        }
    })
}

/// Defines `$avx512` and `$avx2`: `$body` (a plain function, best `#[inline(always)]`, safe or
/// not) compiled again with AVX-512 (F, DQ, VL) and with AVX2 enabled, each an `unsafe fn` of
/// `$body`'s arguments, for `dispatch!` to choose between.
#[cfg(target_arch = "x86_64")]
macro_rules! widened {
    ($avx512:ident, $avx2:ident, $body:ident, <$($g:ident: $bound:path),*>, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        /// # Safety
        /// The CPU has AVX-512F, DQ and VL ([`crate::backend::host::wide::level`]), and the
        /// arguments meet what the plain function asks of them.
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2")]
        pub unsafe fn $avx512<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            $body($($arg),*)
        }
        /// # Safety
        /// The CPU has AVX2, and the arguments meet what the plain function asks of them.
        #[target_feature(enable = "avx2")]
        pub unsafe fn $avx2<$($g: $bound),*>($($arg: $ty),*) -> $ret {
            $body($($arg),*)
        }
    };
}
#[cfg(target_arch = "x86_64")]
pub(crate) use widened;

/// `$body($args)`, or where the CPU has them its AVX-512 or AVX2 copy `wide::$avx512` or
/// `wide::$avx2` (made by `widened!` in the caller's module `wide`), returned from the caller.
macro_rules! dispatch {
    ($avx512:ident, $avx2:ident, $body:ident, $($arg:expr),*) => {{
        #[cfg(target_arch = "x86_64")]
        {
            use $crate::backend::host::wide::{level, Level};
            match level() {
                // SAFETY: `level` found the features the functions are compiled for; the
                // arguments are the caller's, as `$body` takes them.
                Level::Avx512 => return unsafe { wide::$avx512($($arg),*) },
                Level::Avx2 => return unsafe { wide::$avx2($($arg),*) },
                Level::Plain => {}
            }
        }
        $body($($arg),*)
    }};
}
pub(crate) use dispatch;
