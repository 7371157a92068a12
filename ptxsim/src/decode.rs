//! Syntax tree to executable kernels: resolves register, variable, parameter and label names,
//! lays out shared, local and parameter memory, and decodes every instruction and modifier
//! into an [`Op`], once.
//!
//! This is the gate that keeps a half-understood kernel from passing: every opcode, modifier,
//! type and operand form is matched explicitly, and anything not matched is an
//! `Error::Unsupported` naming it and its line. Modifiers that are pure performance hints
//! (cache operators, eviction priorities, prefetch sizes, memory-order qualifiers that a
//! sequential interpreter satisfies trivially) are listed by name and accepted; unknown ones
//! are rejected.

use std::collections::HashMap;

use crate::error::Error;
use crate::ir::*;
use crate::isa::{self, Feature};
use crate::numeric::{self, Rounding};
use crate::parse::{self, Lit, ModuleAst, Operand, Statement, VarDecl};
use crate::types::{Space, Ty};

/// A kernel parameter as laid out in the parameter buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelParam {
    pub name: String,
    pub ty: Ty,
    /// Element count for array parameters (`.b8 p[16]`), else `None`.
    pub array: Option<u64>,
    pub offset: u32,
    pub bytes: u32,
}

/// One decoded `.entry`.
#[derive(Debug, Clone)]
pub struct Kernel {
    pub name: String,
    pub line: u32,
    pub params: Vec<KernelParam>,
    pub param_bytes: u32,
    pub(crate) code: Vec<Inst>,
    pub(crate) texts: Vec<String>,
    pub(crate) n_regs: u32,
    pub(crate) n_preds: u32,
    /// What each instruction of `code` reads and writes.
    pub(crate) uses: Vec<Uses>,
    /// Names of the registers and predicates, by index, for error messages.
    pub(crate) reg_names: Vec<String>,
    pub(crate) pred_names: Vec<String>,
    pub(crate) specials: Vec<(Special, Reg)>,
    pub static_shared_bytes: u32,
    /// Offset of the dynamic (`.extern .shared`) region.
    pub dynamic_shared_offset: u32,
    pub local_bytes_per_thread: u32,
    pub reqntid: Option<(u32, u32, u32)>,
    pub maxntid: Option<(u32, u32, u32)>,
    /// `.reqnctapercluster`: launched in clusters of this shape.
    pub reqnctapercluster: Option<(u32, u32, u32)>,
}

#[derive(Clone, Copy)]
enum Name {
    Data(Reg),
    Pred(PredReg),
}

struct Builder<'m> {
    scopes: Vec<HashMap<String, Name>>,
    n_regs: u32,
    n_preds: u32,
    reg_bits: Vec<u32>,
    reg_names: Vec<String>,
    pred_names: Vec<String>,
    specials: Vec<(Special, Reg)>,
    special_regs: HashMap<String, Reg>,
    sink: Option<Reg>,
    shared: HashMap<String, u32>,
    local: HashMap<String, u32>,
    params: &'m [KernelParam],
    labels: HashMap<String, u32>,
    line: u32,
    opcode: String,
    /// The module's `.version` and `.target`, which each instruction form must be allowed by.
    header: isa::Header,
}

pub(crate) fn build_kernels(
    ast: &ModuleAst,
    dynamic_base: crate::DynamicSharedBase,
) -> Result<Vec<Kernel>, Error> {
    let header = isa::header(
        ast.version.map(|v| (v, ast.version_line)),
        &ast.targets,
        ast.target_line,
    )?;
    ast.entries
        .iter()
        .map(|e| build_kernel(e, &ast.module_vars, header, dynamic_base))
        .collect()
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a.max(1)) * a.max(1)
}

/// Lays out an entry's shared variables: the static ones in order, each at its alignment, then
/// the dynamic (`.extern`) region, where `dynamic_base` says (see [`crate::DynamicSharedBase`]).
fn layout_shared(
    vars: &[&VarDecl],
    shared: &mut HashMap<String, u32>,
    dynamic_base: crate::DynamicSharedBase,
) -> Result<(u32, u32), Error> {
    let mut offset = 0u64;
    let mut dynamic_align = 16u64;
    let mut externs = Vec::new();
    for v in vars {
        let align = v.align.map_or(v.ty.bytes() as u64, u64::from);
        if v.is_extern {
            if v.dims.iter().any(Option::is_some) {
                return Err(Error::unsupported(v.line, "sized .extern .shared arrays"));
            }
            dynamic_align = dynamic_align.max(align);
            externs.push(v.name.clone());
            continue;
        }
        if v.dims.contains(&None) {
            return Err(Error::parse(
                v.line,
                format!("`{}` has an unsized dimension but is not .extern", v.name),
            ));
        }
        offset = align_up(offset, align);
        shared.insert(v.name.clone(), offset as u32);
        offset += v.size_bytes();
    }
    let dynamic = match dynamic_base {
        crate::DynamicSharedBase::AsDeclared => align_up(offset, dynamic_align),
        crate::DynamicSharedBase::Misaligned => {
            // 16-byte aligned, the toolchains' default, and on purpose no coarser
            let base = align_up(offset, 16);
            if base.is_multiple_of(1024) {
                base + 16
            } else {
                base
            }
        }
    };
    for name in externs {
        shared.insert(name, dynamic as u32);
    }
    Ok((offset as u32, dynamic as u32))
}

fn build_kernel(
    e: &parse::EntryAst,
    module_vars: &[VarDecl],
    header: isa::Header,
    dynamic_base: crate::DynamicSharedBase,
) -> Result<Kernel, Error> {
    // Parameters.
    let mut params = Vec::new();
    let mut pofs = 0u64;
    for p in &e.params {
        let elem = p.ty.bytes() as u64;
        let bytes = elem * p.array.unwrap_or(1);
        let align = p.align.map_or(elem, u64::from);
        pofs = align_up(pofs, align);
        params.push(KernelParam {
            name: p.name.clone(),
            ty: p.ty,
            array: p.array,
            offset: pofs as u32,
            bytes: bytes as u32,
        });
        pofs += bytes;
    }

    // Shared and local variables.
    let mut shared_decls: Vec<&VarDecl> = module_vars.iter().collect();
    let mut local_decls = Vec::new();
    for st in &e.body {
        if let Statement::Var(v) = st {
            match v.space {
                Space::Shared => shared_decls.push(v),
                Space::Local => local_decls.push(v),
                other => {
                    return Err(Error::unsupported(
                        v.line,
                        format!(".{} variables in an entry", other.name()),
                    ))
                }
            }
        }
    }
    let mut shared = HashMap::new();
    let (static_shared, dynamic_off) = layout_shared(&shared_decls, &mut shared, dynamic_base)?;
    let mut local = HashMap::new();
    let mut lofs = 0u64;
    for v in &local_decls {
        lofs = align_up(lofs, v.align.map_or(v.ty.bytes() as u64, u64::from));
        local.insert(v.name.clone(), lofs as u32);
        lofs += v.size_bytes();
    }

    // Labels: instruction index of the next instruction.
    let mut labels = HashMap::new();
    let mut pc = 0u32;
    for st in &e.body {
        match st {
            Statement::Label { line, name } if labels.insert(name.clone(), pc).is_some() => {
                return Err(Error::parse(*line, format!("label `{name}` defined twice")));
            }
            Statement::Inst(_) => pc += 1,
            _ => {}
        }
    }

    let mut b = Builder {
        scopes: vec![HashMap::new()],
        n_regs: 0,
        n_preds: 0,
        reg_bits: Vec::new(),
        reg_names: Vec::new(),
        pred_names: Vec::new(),
        specials: Vec::new(),
        special_regs: HashMap::new(),
        sink: None,
        shared,
        local,
        params: &params,
        labels,
        line: e.line,
        opcode: String::new(),
        header,
    };
    let mut code = Vec::new();
    let mut texts = Vec::new();
    for st in &e.body {
        match st {
            Statement::Reg { line, ty, names } => {
                for (base, count) in names {
                    match count {
                        Some(n) => {
                            for i in 0..*n {
                                b.declare(&format!("{base}{i}"), *ty, *line)?;
                            }
                        }
                        None => b.declare(base, *ty, *line)?,
                    }
                }
            }
            Statement::ScopeOpen => b.scopes.push(HashMap::new()),
            Statement::ScopeClose => {
                b.scopes.pop();
            }
            Statement::Inst(inst) => {
                b.line = inst.line;
                b.opcode = inst.opcode.clone();
                let guard = match &inst.guard {
                    Some((name, neg)) => Some(PredSrc {
                        reg: b.pred_reg(name)?,
                        negated: *neg,
                    }),
                    None => None,
                };
                let op = b.decode(inst)?;
                code.push(Inst {
                    op,
                    guard,
                    line: inst.line,
                });
                texts.push(inst.text());
            }
            Statement::Var(_) | Statement::Label { .. } => {}
        }
    }
    // Falling off the end of an entry is a return.
    code.push(Inst {
        op: Op::Exit,
        guard: None,
        line: e.line,
    });
    texts.push("(end of entry)".to_string());
    let uses = code.iter().map(|i| i.op.uses()).collect();

    let (n_regs, n_preds, specials) = (b.n_regs, b.n_preds, b.specials);
    let (reg_names, pred_names) = (b.reg_names, b.pred_names);
    Ok(Kernel {
        name: e.name.clone(),
        line: e.line,
        param_bytes: pofs as u32,
        params,
        code,
        texts,
        n_regs,
        n_preds,
        uses,
        reg_names,
        pred_names,
        specials,
        static_shared_bytes: static_shared,
        dynamic_shared_offset: dynamic_off,
        local_bytes_per_thread: lofs as u32,
        reqntid: e.reqntid,
        maxntid: e.maxntid,
        reqnctapercluster: e.reqnctapercluster,
    })
}

fn special_from_name(name: &str) -> Option<Special> {
    let dim = |s: &str| match s {
        "x" => Some(0u8),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, comp)) = name.split_once('.') {
        let d = dim(comp)?;
        return Some(match base {
            "%tid" => Special::Tid(d),
            "%ntid" => Special::Ntid(d),
            "%ctaid" => Special::Ctaid(d),
            "%nctaid" => Special::Nctaid(d),
            "%clusterid" => Special::ClusterId(d),
            "%nclusterid" => Special::NClusterId(d),
            "%cluster_ctaid" => Special::ClusterCtaId(d),
            "%cluster_nctaid" => Special::ClusterNCtaId(d),
            _ => return None,
        });
    }
    Some(match name {
        "%laneid" => Special::LaneId,
        "%warpid" => Special::WarpId,
        "%nwarpid" => Special::NWarpId,
        "%smid" => Special::SmId,
        "%nsmid" => Special::NSmId,
        "%gridid" => Special::GridId,
        "%lanemask_eq" => Special::LaneMaskEq,
        "%lanemask_lt" => Special::LaneMaskLt,
        "%lanemask_le" => Special::LaneMaskLe,
        "%lanemask_gt" => Special::LaneMaskGt,
        "%lanemask_ge" => Special::LaneMaskGe,
        "%dynamic_smem_size" => Special::DynamicSmemSize,
        "%total_smem_size" => Special::TotalSmemSize,
        "%cluster_ctarank" => Special::ClusterCtaRank,
        "%cluster_nctarank" => Special::ClusterNCtaRank,
        _ => return None,
    })
}

fn is_clock(name: &str) -> Option<u32> {
    match name {
        "%clock" | "%clock_hi" => Some(32),
        "%clock64" | "%globaltimer" => Some(64),
        "%globaltimer_lo" | "%globaltimer_hi" => Some(32),
        _ => None,
    }
}

/// The modifiers of one opcode, consumed as the decoder recognises them; whatever is left
/// at the end is unsupported.
struct Mods {
    list: Vec<String>,
    used: Vec<bool>,
}

impl Mods {
    /// Whether `m` is among the modifiers (used or not).
    fn present(&self, m: &str) -> bool {
        self.list.iter().any(|x| x == m)
    }

    fn new(opcode: &str) -> (String, Mods) {
        let mut parts = opcode.split('.');
        let base = parts.next().unwrap_or("").to_string();
        let list: Vec<String> = parts.map(|s| s.to_string()).collect();
        let used = vec![false; list.len()];
        (base, Mods { list, used })
    }

    fn has(&mut self, m: &str) -> bool {
        for (i, x) in self.list.iter().enumerate() {
            if !self.used[i] && x == m {
                self.used[i] = true;
                return true;
            }
        }
        false
    }

    fn one_of(&mut self, opts: &[&'static str]) -> Option<&'static str> {
        opts.iter().copied().find(|o| self.has(o))
    }

    /// Marks as used every modifier in `opts` (pure hints), however many appear.
    fn accept_all(&mut self, opts: &[&str]) {
        for (i, x) in self.list.iter().enumerate() {
            if !self.used[i] && opts.contains(&x.as_str()) {
                self.used[i] = true;
            }
        }
    }

    /// Unused modifiers that are type names, in order, marked used.
    fn types(&mut self) -> Vec<Ty> {
        let mut out = Vec::new();
        for (i, x) in self.list.iter().enumerate() {
            if !self.used[i] {
                if let Some(t) = Ty::from_name(x) {
                    self.used[i] = true;
                    out.push(t);
                }
            }
        }
        out
    }

    fn rounding(&mut self) -> Option<Rounding> {
        Some(match self.one_of(&["rn", "rna", "rz", "rm", "rp"])? {
            "rn" => Rounding::NearestEven,
            "rna" => Rounding::NearestAway,
            "rz" => Rounding::TowardZero,
            "rm" => Rounding::TowardNegative,
            _ => Rounding::TowardPositive,
        })
    }

    fn int_rounding(&mut self) -> Option<Rounding> {
        Some(match self.one_of(&["rni", "rzi", "rmi", "rpi"])? {
            "rni" => Rounding::NearestEven,
            "rzi" => Rounding::TowardZero,
            "rmi" => Rounding::TowardNegative,
            _ => Rounding::TowardPositive,
        })
    }

    fn leftover(&self) -> Option<&str> {
        self.list
            .iter()
            .zip(&self.used)
            .find(|(_, u)| !**u)
            .map(|(m, _)| m.as_str())
    }
}

/// Memory-model qualifiers that a sequential, one-thread-at-a-time interpreter satisfies
/// trivially.
const ORDER_HINTS: &[&str] = &[
    "weak", "relaxed", "acquire", "release", "acq_rel", "volatile", "cta", "gpu", "sys", "cluster",
];
/// Cache operators and eviction/prefetch hints: they change speed, never values.
const CACHE_HINTS: &[&str] = &[
    "ca",
    "cg",
    "cs",
    "lu",
    "cv",
    "wb",
    "wt",
    "nc",
    "L1::evict_normal",
    "L1::evict_unchanged",
    "L1::evict_first",
    "L1::evict_last",
    "L1::no_allocate",
    "L2::64B",
    "L2::128B",
    "L2::256B",
];

impl Builder<'_> {
    fn err_parse(&self, msg: impl Into<String>) -> Error {
        Error::parse(self.line, format!("in `{}`: {}", self.opcode, msg.into()))
    }

    fn unsupported(&self, what: impl Into<String>) -> Error {
        Error::unsupported(self.line, format!("{} (in `{}`)", what.into(), self.opcode))
    }

    /// Fails unless the module's `.version` and `.target` allow `feature`.
    fn need(&self, feature: Feature) -> Result<(), Error> {
        feature.check(self.header, self.line, &self.opcode)
    }

    fn declare(&mut self, name: &str, ty: Ty, line: u32) -> Result<(), Error> {
        let scope = self.scopes.last_mut().expect("at least one scope");
        let entry = if ty == Ty::Pred {
            self.n_preds += 1;
            self.pred_names.push(name.to_string());
            Name::Pred(self.n_preds - 1)
        } else {
            if ty.bits() > 64 {
                return Err(Error::unsupported(
                    line,
                    format!("registers of type .{}", ty.name()),
                ));
            }
            self.n_regs += 1;
            self.reg_bits.push(ty.bits().max(8));
            self.reg_names.push(name.to_string());
            Name::Data(self.n_regs - 1)
        };
        if scope.insert(name.to_string(), entry).is_some() {
            return Err(Error::parse(
                line,
                format!("register `{name}` declared twice"),
            ));
        }
        Ok(())
    }

    fn lookup(&self, name: &str) -> Option<Name> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn hidden_reg(&mut self, bits: u32, name: &str) -> Reg {
        self.n_regs += 1;
        self.reg_bits.push(bits);
        self.reg_names.push(name.to_string());
        self.n_regs - 1
    }

    fn special_reg(&mut self, name: &str) -> Result<Option<Reg>, Error> {
        if let Some(r) = self.special_regs.get(name) {
            return Ok(Some(*r));
        }
        match special_from_name(name) {
            Some(s) => {
                if matches!(s, Special::DynamicSmemSize | Special::TotalSmemSize) {
                    self.need(Feature::SmemSizeRegisters)?;
                }
                if matches!(
                    s,
                    Special::ClusterCtaRank
                        | Special::ClusterNCtaRank
                        | Special::ClusterId(_)
                        | Special::NClusterId(_)
                        | Special::ClusterCtaId(_)
                        | Special::ClusterNCtaId(_)
                ) {
                    self.need(Feature::ClusterRegisters)?;
                }
                let r = self.hidden_reg(32, name);
                self.specials.push((s, r));
                self.special_regs.insert(name.to_string(), r);
                Ok(Some(r))
            }
            None if name.starts_with('%')
                && self.lookup(name).is_none()
                && is_clock(name).is_none() =>
            {
                if name.starts_with("%envreg")
                    || name.starts_with("%pm")
                    || name.starts_with("%cluster")
                    || name.starts_with("%reserved")
                    || name.starts_with("%current_graph_exec")
                    || name.starts_with("%aggr_smem_size")
                    || name.starts_with("%is_explicit_cluster")
                {
                    Err(self.unsupported(format!("special register `{name}`")))
                } else {
                    Ok(None)
                }
            }
            None => Ok(None),
        }
    }

    fn data_reg(&mut self, name: &str) -> Result<Reg, Error> {
        match self.lookup(name) {
            Some(Name::Data(r)) => Ok(r),
            Some(Name::Pred(_)) => Err(self.err_parse(format!(
                "`{name}` is a predicate, a data register is needed here"
            ))),
            None => {
                if let Some(r) = self.special_reg(name)? {
                    return Ok(r);
                }
                Err(self.err_parse(format!("undeclared register `{name}`")))
            }
        }
    }

    fn pred_reg(&self, name: &str) -> Result<PredReg, Error> {
        match self.lookup(name) {
            Some(Name::Pred(p)) => Ok(p),
            Some(Name::Data(..)) => Err(self.err_parse(format!("`{name}` is not a predicate"))),
            None => Err(self.err_parse(format!("undeclared predicate `{name}`"))),
        }
    }

    fn sink(&mut self) -> Reg {
        if let Some(s) = self.sink {
            return s;
        }
        let r = self.hidden_reg(64, "_");
        self.sink = Some(r);
        r
    }

    fn dst(&mut self, op: &Operand) -> Result<Reg, Error> {
        match op {
            Operand::Name(n) => {
                if special_from_name(n).is_some() || is_clock(n).is_some() {
                    return Err(self.err_parse(format!("special register `{n}` is read-only")));
                }
                self.data_reg(n)
            }
            Operand::Sink => Ok(self.sink()),
            other => {
                Err(self.err_parse(format!("expected a destination register, found {other:?}")))
            }
        }
    }

    fn dst_pred(&self, op: &Operand) -> Result<PredReg, Error> {
        match op {
            Operand::Name(n) => self.pred_reg(n),
            other => {
                Err(self.err_parse(format!("expected a predicate destination, found {other:?}")))
            }
        }
    }

    fn pred_src(&self, op: &Operand) -> Result<PredSrc, Error> {
        match op {
            Operand::Name(n) => Ok(PredSrc {
                reg: self.pred_reg(n)?,
                negated: false,
            }),
            Operand::NotName(n) => Ok(PredSrc {
                reg: self.pred_reg(n)?,
                negated: true,
            }),
            other => Err(self.err_parse(format!("expected a predicate, found {other:?}"))),
        }
    }

    /// A source operand whose immediates are interpreted as type `ty`.
    fn src(&mut self, op: &Operand, ty: Ty) -> Result<Src, Error> {
        match op {
            Operand::Name(n) => {
                if let Some(off) = self.shared.get(n) {
                    return Ok(Src::Imm(*off as u64));
                }
                if let Some(off) = self.local.get(n) {
                    return Ok(Src::Imm(*off as u64));
                }
                if is_clock(n).is_some() {
                    return Err(
                        self.unsupported(format!("`{n}` as an operand of anything but mov"))
                    );
                }
                self.data_reg(n).map(Src::Reg)
            }
            Operand::Imm(lit) => Ok(Src::Imm(self.imm(*lit, ty)?)),
            other => {
                Err(self.err_parse(format!("expected a register or immediate, found {other:?}")))
            }
        }
    }

    fn imm(&self, lit: Lit, ty: Ty) -> Result<u64, Error> {
        let mask = |bits: u32| {
            if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            }
        };
        Ok(match ty {
            Ty::F32 => match lit {
                Lit::F32Bits(b) => b as u64,
                Lit::F64Bits(b) => (f64::from_bits(b) as f32).to_bits() as u64,
                Lit::Float(v) => (v as f32).to_bits() as u64,
                Lit::Int(v) => (v as f32).to_bits() as u64,
            },
            Ty::F64 => match lit {
                Lit::F32Bits(b) => (f32::from_bits(b) as f64).to_bits(),
                Lit::F64Bits(b) => b,
                Lit::Float(v) => v.to_bits(),
                Lit::Int(v) => (v as f64).to_bits(),
            },
            Ty::F16 | Ty::Bf16 => {
                let fmt = if ty == Ty::F16 {
                    numeric::F16
                } else {
                    numeric::BF16
                };
                match lit {
                    Lit::Int(v) => (v as u64) & 0xffff,
                    Lit::F32Bits(b) => numeric::round_f64(
                        f32::from_bits(b) as f64,
                        fmt,
                        Rounding::NearestEven,
                        false,
                    ),
                    Lit::F64Bits(b) => {
                        numeric::round_f64(f64::from_bits(b), fmt, Rounding::NearestEven, false)
                    }
                    Lit::Float(v) => numeric::round_f64(v, fmt, Rounding::NearestEven, false),
                }
            }
            Ty::Pred => match lit {
                Lit::Int(v) => (v != 0) as u64,
                _ => return Err(self.err_parse("float literal used as a predicate")),
            },
            _ => match lit {
                Lit::Int(v) => (v as u64) & mask(ty.bits()),
                Lit::F32Bits(b) if ty.bits() == 32 => b as u64,
                Lit::F64Bits(b) if ty.bits() == 64 => b,
                _ => return Err(self.err_parse(format!("float literal used as .{}", ty.name()))),
            },
        })
    }

    fn vec_srcs(&mut self, op: &Operand, ty: Ty) -> Result<Vec<Src>, Error> {
        match op {
            Operand::Vector(v) => v.iter().map(|o| self.src(o, ty)).collect(),
            other => Ok(vec![self.src(other, ty)?]),
        }
    }

    fn vec_dsts(&mut self, op: &Operand) -> Result<Vec<Reg>, Error> {
        match op {
            Operand::Vector(v) => v.iter().map(|o| self.dst(o)).collect(),
            other => Ok(vec![self.dst(other)?]),
        }
    }

    fn reg_bits_of(&self, r: Reg) -> u32 {
        self.reg_bits[r as usize]
    }

    /// An address operand in `space`; variable names become offsets in their space.
    fn addr(&mut self, op: &Operand, space: Space) -> Result<Addr, Error> {
        let Operand::Addr { base, offset } = op else {
            return Err(self.err_parse(format!("expected an address `[...]`, found {op:?}")));
        };
        let Some(name) = base else {
            return Ok(Addr {
                base: None,
                offset: *offset,
            });
        };
        if let Some(off) = self.shared.get(name) {
            let window = match space {
                Space::Shared => 0,
                Space::Generic => crate::memory::SHARED_WINDOW as i64,
                _ => {
                    return Err(self.err_parse(format!(
                        "shared variable `{name}` used in a .{} access",
                        space.name()
                    )))
                }
            };
            return Ok(Addr {
                base: None,
                offset: window + *off as i64 + offset,
            });
        }
        if let Some(off) = self.local.get(name) {
            let window = match space {
                Space::Local => 0,
                Space::Generic => crate::memory::LOCAL_WINDOW as i64,
                _ => {
                    return Err(self.err_parse(format!(
                        "local variable `{name}` used in a .{} access",
                        space.name()
                    )))
                }
            };
            return Ok(Addr {
                base: None,
                offset: window + *off as i64 + offset,
            });
        }
        if let Some(p) = self.params.iter().find(|p| &p.name == name) {
            if space != Space::Param {
                return Err(self.unsupported(format!(
                    "kernel parameter `{name}` addressed in .{} space",
                    space.name()
                )));
            }
            return Ok(Addr {
                base: None,
                offset: p.offset as i64 + offset,
            });
        }
        let r = self.data_reg(name)?;
        Ok(Addr {
            base: Some(r),
            offset: *offset,
        })
    }

    fn expect_operands(
        &self,
        ops: &[Operand],
        n: std::ops::RangeInclusive<usize>,
    ) -> Result<(), Error> {
        if n.contains(&ops.len()) {
            Ok(())
        } else {
            Err(self.err_parse(format!(
                "expected {} operands, found {}",
                if n.start() == n.end() {
                    n.start().to_string()
                } else {
                    format!("{}..={}", n.start(), n.end())
                },
                ops.len()
            )))
        }
    }

    fn one_type(&self, mods: &mut Mods) -> Result<Ty, Error> {
        let tys = mods.types();
        match tys.as_slice() {
            [t] => Ok(*t),
            [] => Err(self.err_parse("missing type")),
            _ => Err(self.err_parse("too many types")),
        }
    }

    fn finish(&self, mods: &Mods) -> Result<(), Error> {
        match mods.leftover() {
            Some(m) => Err(self.unsupported(format!("modifier `.{m}`"))),
            None => Ok(()),
        }
    }

    fn decode(&mut self, inst: &parse::Instruction) -> Result<Op, Error> {
        let (base, mut mods) = Mods::new(&inst.opcode);
        let ops = &inst.operands;
        let op = match base.as_str() {
            "mov" => self.decode_mov(&mut mods, ops)?,
            "ld" | "ldu" => self.decode_ld(&mut mods, ops)?,
            "st" => self.decode_st(&mut mods, ops)?,
            "cvta" => {
                let to_space = mods.has("to");
                let space = self
                    .space(&mut mods)?
                    .ok_or_else(|| self.err_parse("cvta needs a state space"))?;
                if space == Space::Param {
                    self.need(Feature::CvtaParam)?;
                }
                let ty = self.one_type(&mut mods)?;
                self.expect_operands(ops, 2..=2)?;
                Op::Cvta {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    space,
                    to_space,
                    bits: ty.bits(),
                }
            }
            "cvt" => self.decode_cvt(&mut mods, ops)?,
            "add" | "sub" | "mul" | "div" | "rem" | "min" | "max" => {
                self.decode_arith(&base, &mut mods, ops)?
            }
            "mad" | "fma" => self.decode_mad(&base, &mut mods, ops)?,
            "abs" | "neg" | "sqrt" | "rcp" | "popc" | "clz" | "brev" | "not" | "cnot" => {
                self.decode_unary(&base, &mut mods, ops)?
            }
            "and" | "or" | "xor" => {
                let ty = self.one_type(&mut mods)?;
                self.expect_operands(ops, 3..=3)?;
                let bop = match base.as_str() {
                    "and" => BoolOp::And,
                    "or" => BoolOp::Or,
                    _ => BoolOp::Xor,
                };
                if ty == Ty::Pred {
                    Op::PredLogic {
                        op: bop,
                        d: self.dst_pred(&ops[0])?,
                        a: self.pred_src(&ops[1])?,
                        b: self.pred_src(&ops[2])?,
                    }
                } else {
                    self.require_bits_type(ty)?;
                    let iop = match bop {
                        BoolOp::And => IntOp::And,
                        BoolOp::Or => IntOp::Or,
                        BoolOp::Xor => IntOp::Xor,
                    };
                    Op::Int {
                        op: iop,
                        bits: ty.bits(),
                        signed: false,
                        d: self.dst(&ops[0])?,
                        a: self.src(&ops[1], ty)?,
                        b: self.src(&ops[2], ty)?,
                    }
                }
            }
            "shl" | "shr" => {
                let ty = self.one_type(&mut mods)?;
                if !ty.is_int() || ty.bits() < 16 {
                    return Err(self.unsupported(format!("type .{}", ty.name())));
                }
                self.expect_operands(ops, 3..=3)?;
                let op = if base == "shl" {
                    IntOp::Shl
                } else {
                    IntOp::Shr
                };
                Op::Int {
                    op,
                    bits: ty.bits(),
                    signed: ty.is_signed_int(),
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], Ty::U32)?,
                }
            }
            "bfe" => {
                let ty = self.one_type(&mut mods)?;
                if !matches!(ty, Ty::U32 | Ty::U64 | Ty::S32 | Ty::S64) {
                    return Err(self.unsupported(format!("type .{}", ty.name())));
                }
                self.expect_operands(ops, 4..=4)?;
                Op::Bfe {
                    bits: ty.bits(),
                    signed: ty.is_signed_int(),
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    pos: self.src(&ops[2], Ty::U32)?,
                    len: self.src(&ops[3], Ty::U32)?,
                }
            }
            "bfi" => {
                let ty = self.one_type(&mut mods)?;
                if !matches!(ty, Ty::B32 | Ty::B64) {
                    return Err(self.unsupported(format!("type .{}", ty.name())));
                }
                self.expect_operands(ops, 5..=5)?;
                Op::Bfi {
                    bits: ty.bits(),
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                    pos: self.src(&ops[3], Ty::U32)?,
                    len: self.src(&ops[4], Ty::U32)?,
                }
            }
            "prmt" => {
                let ty = self.one_type(&mut mods)?;
                if ty != Ty::B32 {
                    return Err(self.unsupported(format!("type .{}", ty.name())));
                }
                self.expect_operands(ops, 4..=4)?;
                Op::Prmt {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                    c: self.src(&ops[3], ty)?,
                }
            }
            "lop3" => {
                self.need(Feature::Lop3)?;
                let ty = self.one_type(&mut mods)?;
                if ty != Ty::B32 {
                    return Err(self.unsupported(format!("type .{}", ty.name())));
                }
                self.expect_operands(ops, 5..=5)?;
                let Src::Imm(lut) = self.src(&ops[4], Ty::B32)? else {
                    return Err(self.err_parse("lop3 LUT must be an immediate"));
                };
                Op::Lop3 {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                    c: self.src(&ops[3], ty)?,
                    lut: lut as u8,
                }
            }
            "setp" => self.decode_setp(&mut mods, ops)?,
            "selp" => {
                let ty = self.one_type(&mut mods)?;
                self.expect_operands(ops, 4..=4)?;
                Op::Selp {
                    bits: ty.bits(),
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                    p: self.pred_src(&ops[3])?,
                }
            }
            "bra" => {
                let uni = mods.has("uni");
                self.expect_operands(ops, 1..=1)?;
                let Operand::Name(label) = &ops[0] else {
                    return Err(self.err_parse("bra needs a label"));
                };
                let target = *self
                    .labels
                    .get(label)
                    .ok_or_else(|| self.err_parse(format!("undefined label `{label}`")))?;
                Op::Bra { target, uni }
            }
            "ret" | "exit" => {
                mods.has("uni");
                self.expect_operands(ops, 0..=0)?;
                Op::Exit
            }
            "trap" => Op::Trap,
            "barrier" if mods.present("cluster") => {
                mods.has("cluster");
                self.need(Feature::BarrierCluster)?;
                let aligned = mods.has("aligned");
                self.expect_operands(ops, 0..=0)?;
                if mods.has("arrive") {
                    if mods.one_of(&["release", "relaxed"]).is_some() {
                        self.need(Feature::BarrierClusterSem)?;
                    }
                    Op::ClusterArrive { aligned }
                } else if mods.has("wait") {
                    if mods.has("acquire") {
                        self.need(Feature::BarrierClusterSem)?;
                    }
                    Op::ClusterWait { aligned }
                } else {
                    return Err(self.err_parse("barrier.cluster needs .arrive or .wait"));
                }
            }
            "bar" | "barrier" => self.decode_bar(base == "bar", &mut mods, ops)?,
            "mapa" => {
                self.need(Feature::Mapa)?;
                if !mods.has("shared::cluster") {
                    return Err(self.unsupported(
                        "mapa other than .shared::cluster (a generic address of another CTA)",
                    ));
                }
                if !mods.has("u32") {
                    return Err(self.unsupported("mapa.shared::cluster other than .u32"));
                }
                self.expect_operands(ops, 3..=3)?;
                Op::Mapa {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], Ty::U32)?,
                    rank: self.src(&ops[2], Ty::U32)?,
                }
            }
            "membar" => {
                mods.one_of(&["cta", "gl", "sys"])
                    .ok_or_else(|| self.err_parse("membar needs .cta, .gl or .sys"))?;
                Op::Nop
            }
            "fence" if mods.present("mbarrier_init") => {
                mods.has("mbarrier_init");
                self.need(Feature::FenceMbarrierInit)?;
                if !mods.has("release") || !mods.has("cluster") {
                    return Err(self.err_parse("fence.mbarrier_init takes .release.cluster"));
                }
                self.expect_operands(ops, 0..=0)?;
                Op::Nop
            }
            "mbarrier" => self.decode_mbarrier(&mut mods, ops)?,
            "fence" if mods.present("proxy") => {
                mods.has("proxy");
                if !mods.has("async") {
                    return Err(self.unsupported("fence.proxy other than fence.proxy.async"));
                }
                self.need(Feature::FenceProxyAsync)?;
                mods.one_of(&["shared::cta", "global", "shared::cluster"]);
                self.expect_operands(ops, 0..=0)?;
                Op::FenceProxyAsync
            }
            "fence" => {
                self.need(Feature::MemoryOrder)?;
                mods.one_of(&["sc", "acq_rel"]);
                let scope = mods
                    .one_of(&["cta", "gpu", "sys", "cluster"])
                    .ok_or_else(|| self.unsupported("fence without a scope"))?;
                if scope == "cluster" {
                    self.need(Feature::ClusterScope)?;
                }
                Op::Nop
            }
            "prefetch" => {
                mods.one_of(&["global", "local"]);
                let level = mods
                    .one_of(&["L1", "L2", "L2::evict_last", "L2::evict_normal"])
                    .ok_or_else(|| self.unsupported("prefetch level"))?;
                if level.starts_with("L2::") {
                    self.need(Feature::PrefetchEviction)?;
                }
                self.expect_operands(ops, 1..=1)?;
                Op::Nop
            }
            "createpolicy" => {
                self.need(Feature::Createpolicy)?;
                // Builds the cache-policy operand of `.L2::cache_hint` accesses: a hint, so
                // any value will do; the operands are still checked.
                mods.one_of(&["fractional", "range"])
                    .ok_or_else(|| self.err_parse("createpolicy needs .fractional or .range"))?;
                mods.accept_all(&[
                    "L2::evict_last",
                    "L2::evict_normal",
                    "L2::evict_first",
                    "L2::evict_unchanged",
                    "global",
                ]);
                if !mods.has("b64") {
                    return Err(self.err_parse("createpolicy needs .b64"));
                }
                self.expect_operands(ops, 1..=4)?;
                for op in &ops[1..] {
                    if matches!(op, Operand::Name(_)) {
                        self.src(op, Ty::B64)?;
                    }
                }
                Op::Mov {
                    d: self.dst(&ops[0])?,
                    a: Src::Imm(0),
                    bits: 64,
                }
            }
            "nanosleep" => {
                self.need(Feature::Nanosleep)?;
                mods.has("u32");
                Op::Nop
            }
            "shfl" => self.decode_shfl(&mut mods, ops)?,
            "vote" => self.decode_vote(&mut mods, ops)?,
            "activemask" => {
                self.need(Feature::Activemask)?;
                mods.has("b32");
                self.expect_operands(ops, 1..=1)?;
                Op::Activemask {
                    d: self.dst(&ops[0])?,
                }
            }
            "atom" | "red" => self.decode_atom(base == "red", &mut mods, ops)?,
            "cp" => self.decode_cp(&mut mods, ops)?,
            "ldmatrix" => self.decode_ldmatrix(&mut mods, ops)?,
            "mma" => self.decode_mma(&mut mods, ops)?,
            "wgmma" => self.decode_wgmma(&mut mods, ops)?,
            other => return Err(self.unsupported(format!("instruction `{other}`"))),
        };
        self.finish(&mods)?;
        Ok(op)
    }

    fn require_bits_type(&self, ty: Ty) -> Result<(), Error> {
        if ty.is_int() && ty.bits() >= 16 {
            Ok(())
        } else {
            Err(self.unsupported(format!("type .{}", ty.name())))
        }
    }

    fn space(&self, mods: &mut Mods) -> Result<Option<Space>, Error> {
        if mods.present("shared::cta") {
            self.need(Feature::SharedCta)?;
        }
        if mods.present("param::entry") {
            self.need(Feature::ParamEntry)?;
        }
        let s = mods.one_of(&[
            "global",
            "shared",
            "shared::cta",
            "local",
            "param",
            "param::entry",
            "const",
        ]);
        if mods
            .one_of(&["shared::cluster", "param::func", "tex"])
            .is_some()
        {
            return Err(self.unsupported("this state space"));
        }
        Ok(s.map(|s| match s {
            "global" => Space::Global,
            "shared" | "shared::cta" => Space::Shared,
            "local" => Space::Local,
            "param" | "param::entry" => Space::Param,
            _ => Space::Const,
        }))
    }

    fn vector_count(&self, mods: &mut Mods) -> Result<usize, Error> {
        Ok(match mods.one_of(&["v2", "v4", "v8"]) {
            Some("v2") => 2,
            Some("v4") => 4,
            Some(_) => return Err(self.unsupported("`.v8` vectors")),
            None => 1,
        })
    }

    fn decode_mov(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let ty = self.one_type(mods)?;
        self.expect_operands(ops, 2..=2)?;
        if ty == Ty::Pred {
            return Ok(match &ops[1] {
                Operand::Imm(Lit::Int(v)) => {
                    // mov.pred p, 1  ==  p = (x == x) style constant: model as setp on immediates.
                    let p = self.dst_pred(&ops[0])?;
                    let v = Src::Imm((*v != 0) as u64);
                    Op::Setp {
                        cmp: Cmp::Ne,
                        ty: Ty::U32,
                        ftz: false,
                        p: Some(p),
                        q: None,
                        a: v,
                        b: Src::Imm(0),
                        combine: None,
                    }
                }
                other => Op::MovPred {
                    d: self.dst_pred(&ops[0])?,
                    a: self.pred_src(other)?,
                },
            });
        }
        if let Operand::Vector(parts) = &ops[0] {
            let n = parts.len() as u32;
            if n < 2 || ty.bits() % n != 0 {
                return Err(self.err_parse("bad unpack vector"));
            }
            let ds = parts
                .iter()
                .map(|p| {
                    if *p == Operand::Sink {
                        Ok(None)
                    } else {
                        self.dst(p).map(Some)
                    }
                })
                .collect::<Result<_, _>>()?;
            return Ok(Op::Unpack {
                ds,
                a: self.src(&ops[1], ty)?,
                part_bits: ty.bits() / n,
            });
        }
        if let Operand::Vector(parts) = &ops[1] {
            let n = parts.len() as u32;
            if n < 2 || ty.bits() % n != 0 {
                return Err(self.err_parse("bad pack vector"));
            }
            let part_ty = match ty.bits() / n {
                8 => Ty::B8,
                16 => Ty::B16,
                32 => Ty::B32,
                _ => return Err(self.err_parse("bad pack vector")),
            };
            let parts = parts
                .iter()
                .map(|p| self.src(p, part_ty))
                .collect::<Result<_, _>>()?;
            return Ok(Op::Pack {
                d: self.dst(&ops[0])?,
                parts,
                part_bits: ty.bits() / n,
            });
        }
        if let Operand::Name(n) = &ops[1] {
            if let Some(bits) = is_clock(n) {
                if n.ends_with("_hi") || n.ends_with("_lo") {
                    return Err(self.unsupported(format!("`{n}`")));
                }
                return Ok(Op::ReadClock {
                    d: self.dst(&ops[0])?,
                    bits,
                    timer: n.starts_with("%globaltimer"),
                });
            }
            // The address of a kernel parameter: its offset in the .param space (`cvta.param`
            // turns it into a generic address, as for a `__grid_constant__` tensor map).
            if let Some(p) = self.params.iter().find(|p| &p.name == n) {
                let offset = p.offset as u64;
                return Ok(Op::Mov {
                    d: self.dst(&ops[0])?,
                    a: Src::Imm(offset),
                    bits: ty.bits(),
                });
            }
        }
        Ok(Op::Mov {
            d: self.dst(&ops[0])?,
            a: self.src(&ops[1], ty)?,
            bits: ty.bits(),
        })
    }

    /// The version/target checks of ld/st modifiers, and the ones only 256-bit accesses take.
    fn check_ld_st_hints(&self, mods: &Mods) -> Result<(), Error> {
        if let Some(m) = mods.list.iter().find(|m| m.starts_with("L2::evict_")) {
            // "Instruction 'ld' requires '.v8.b32/.v4.b64' type with '.L2::evict_last'".
            return Err(self.err_parse(format!(
                "`.{m}` is only for 256-bit accesses (.v8.b32 / .v4.b64), which ptxsim does not run"
            )));
        }
        if mods.list.iter().any(|m| m.starts_with("L1::")) {
            self.need(Feature::L1Eviction)?;
        }
        if mods.present("L2::64B") || mods.present("L2::128B") {
            self.need(Feature::PrefetchSize)?;
        }
        if mods.present("L2::256B") {
            self.need(Feature::PrefetchSize256)?;
        }
        if mods.present("L2::cache_hint") {
            self.need(Feature::L2CacheHint)?;
        }
        if mods.present("cluster") {
            self.need(Feature::ClusterScope)?;
        }
        if ["weak", "relaxed", "acquire", "release"]
            .iter()
            .any(|m| mods.present(m))
        {
            self.need(Feature::MemoryOrder)?;
        }
        Ok(())
    }

    fn decode_ld(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        self.check_ld_st_hints(mods)?;
        let strength = memory_strength(mods);
        let space = self.space(mods)?.unwrap_or(Space::Generic);
        if space == Space::Const {
            return Err(self.unsupported("the .const state space (no .const variables)"));
        }
        mods.accept_all(ORDER_HINTS);
        mods.accept_all(CACHE_HINTS);
        let policy = mods.has("L2::cache_hint");
        let n = self.vector_count(mods)?;
        let ty = self.one_type(mods)?;
        if ty == Ty::Pred || ty.bits() > 64 {
            return Err(self.unsupported(format!("ld of .{}", ty.name())));
        }
        self.expect_operands(ops, if policy { 3..=3 } else { 2..=2 })?;
        let ds: Vec<Option<Reg>> = match &ops[0] {
            Operand::Vector(v) => v
                .iter()
                .map(|o| {
                    if *o == Operand::Sink {
                        Ok(None)
                    } else {
                        self.dst(o).map(Some)
                    }
                })
                .collect::<Result<_, _>>()?,
            other => vec![Some(self.dst(other)?)],
        };
        if ds.len() != n {
            return Err(self.err_parse(format!("{} destinations for a .v{n} load", ds.len())));
        }
        let dst_bits = ds
            .iter()
            .map(|d| d.map_or(64, |r| self.reg_bits_of(r)))
            .collect();
        let addr = self.addr(&ops[1], space)?;
        if policy {
            self.src(&ops[2], Ty::B64)?;
        }
        Ok(Op::Ld {
            space,
            ty,
            ds,
            dst_bits,
            addr,
            strength,
        })
    }

    fn decode_st(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        self.check_ld_st_hints(mods)?;
        let strength = memory_strength(mods);
        let space = self.space(mods)?.unwrap_or(Space::Generic);
        if matches!(space, Space::Param | Space::Const) {
            return Err(self.unsupported(format!("st to .{}", space.name())));
        }
        mods.accept_all(ORDER_HINTS);
        mods.accept_all(CACHE_HINTS);
        let policy = mods.has("L2::cache_hint");
        let n = self.vector_count(mods)?;
        let ty = self.one_type(mods)?;
        if ty == Ty::Pred || ty.bits() > 64 {
            return Err(self.unsupported(format!("st of .{}", ty.name())));
        }
        self.expect_operands(ops, if policy { 3..=3 } else { 2..=2 })?;
        let addr = self.addr(&ops[0], space)?;
        let srcs = self.vec_srcs(&ops[1], ty)?;
        if srcs.len() != n {
            return Err(self.err_parse(format!("{} sources for a .v{n} store", srcs.len())));
        }
        if policy {
            self.src(&ops[2], Ty::B64)?;
        }
        Ok(Op::St {
            space,
            ty,
            srcs,
            addr,
            strength,
        })
    }

    fn decode_cvt(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let frnd = mods.rounding();
        let irnd = mods.int_rounding();
        let sat = mods.has("sat");
        let satfinite = mods.has("satfinite");
        let ftz = mods.has("ftz");
        let relu = mods.has("relu");
        let tys = mods.types();
        let [to, from] = tys[..] else {
            return Err(self.err_parse("cvt needs a destination and a source type"));
        };
        if frnd.is_some() && irnd.is_some() {
            return Err(self.err_parse("two rounding modifiers"));
        }
        if relu && sat {
            return Err(self.err_parse("`.relu` cannot be combined with `.sat`"));
        }
        let packed = matches!(to, Ty::F16x2 | Ty::Bf16x2 | Ty::E4m3x2 | Ty::E5m2x2)
            || matches!(from, Ty::E4m3x2 | Ty::E5m2x2 | Ty::F16x2);
        if packed && (sat || ftz || irnd.is_some()) {
            return Err(self.err_parse(
                "`.sat`, `.ftz` and integer roundings are not allowed on a packed cvt",
            ));
        }
        if packed && relu {
            self.need(Feature::CvtRelu)?;
        }
        // Packed conversions.
        match (to, from) {
            (Ty::F16x2 | Ty::Bf16x2 | Ty::E4m3x2 | Ty::E5m2x2, Ty::F32) => {
                if matches!(to, Ty::E4m3x2 | Ty::E5m2x2) {
                    self.need(Feature::CvtFp8)?;
                } else {
                    self.need(Feature::CvtPairF32)?;
                    if satfinite {
                        self.need(Feature::CvtSatfinite)?;
                    }
                }
                self.expect_operands(ops, 3..=3)?;
                let rnd =
                    frnd.ok_or_else(|| self.err_parse("packed cvt needs a rounding modifier"))?;
                if matches!(to, Ty::E4m3x2 | Ty::E5m2x2)
                    && (rnd != Rounding::NearestEven || !satfinite)
                {
                    return Err(self.err_parse("cvt to e4m3x2/e5m2x2 requires .rn.satfinite"));
                }
                if !matches!(rnd, Rounding::NearestEven | Rounding::TowardZero) {
                    return Err(self.unsupported("this rounding for a packed cvt"));
                }
                return Ok(Op::CvtPair {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], Ty::F32)?,
                    b: self.src(&ops[2], Ty::F32)?,
                    to,
                    rnd,
                    satfinite,
                    relu,
                });
            }
            (Ty::E4m3x2 | Ty::E5m2x2, Ty::F16x2) => {
                self.need(Feature::CvtFp8)?;
                self.expect_operands(ops, 2..=2)?;
                if frnd != Some(Rounding::NearestEven) || !satfinite {
                    return Err(self.err_parse("cvt to e4m3x2/e5m2x2 requires .rn.satfinite"));
                }
                return Ok(Op::CvtF16x2ToF8x2 {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], Ty::B32)?,
                    to,
                    relu,
                });
            }
            (Ty::F16x2, Ty::E4m3x2 | Ty::E5m2x2) => {
                self.need(Feature::CvtFp8)?;
                self.expect_operands(ops, 2..=2)?;
                if frnd != Some(Rounding::NearestEven) || satfinite {
                    return Err(
                        self.err_parse("cvt.f16x2 from an fp8 pair takes .rn and no .satfinite")
                    );
                }
                return Ok(Op::CvtF8x2ToF16x2 {
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], Ty::B16)?,
                    from,
                    relu,
                });
            }
            _ if packed => {
                return Err(self.unsupported(format!("cvt.{}.{}", to.name(), from.name())))
            }
            _ => {}
        }
        self.expect_operands(ops, 2..=2)?;
        // What the scalar forms allow (PTX ISA, cvt: ".relu" and ".satfinite" only for
        // conversions from .f32 to .f16/.bf16 (and .tf32); no ".sat" to .bf16).
        let narrow_from_f32 = from == Ty::F32 && matches!(to, Ty::F16 | Ty::Bf16);
        if relu && !(narrow_from_f32 || to == Ty::Tf32) {
            return Err(self.err_parse(format!(
                "`.relu` is only for cvt from .f32 to .f16 or .bf16, not cvt.{}.{}",
                to.name(),
                from.name()
            )));
        }
        if satfinite && !(narrow_from_f32 || (to == Ty::Tf32 && from == Ty::F32)) {
            return Err(self.err_parse(format!(
                "`.satfinite` is only for cvt from .f32 to .f16, .bf16 or .tf32, not cvt.{}.{}",
                to.name(),
                from.name()
            )));
        }
        if sat && to == Ty::Bf16 {
            return Err(self.err_parse("`.sat` is not allowed on cvt to .bf16"));
        }
        if to == Ty::Tf32 {
            match frnd {
                Some(Rounding::NearestAway) => {
                    self.need(Feature::CvtTf32Rna)?;
                    if satfinite {
                        self.need(Feature::CvtSatfinite)?;
                    }
                }
                Some(Rounding::NearestEven | Rounding::TowardZero) => {
                    self.need(Feature::CvtTf32RnRz)?;
                    if satfinite {
                        self.need(Feature::CvtTf32RnRzSatfinite)?;
                    }
                }
                _ => return Err(self.err_parse("cvt.tf32.f32 takes .rna, .rn or .rz")),
            }
            if ftz {
                return Err(self.err_parse("`.ftz` is not allowed on cvt to .tf32"));
            }
            if relu {
                return Err(self.unsupported("cvt.relu.tf32.f32"));
            }
        } else {
            if relu {
                self.need(Feature::CvtRelu)?;
            }
            if satfinite {
                self.need(Feature::CvtSatfinite)?;
            }
        }
        match (to, from) {
            (Ty::Bf16, Ty::F32) => self.need(Feature::CvtBf16F32)?,
            (Ty::F32, Ty::Bf16) => self.need(Feature::CvtF32Bf16)?,
            (Ty::Bf16, _) | (_, Ty::Bf16) => self.need(Feature::CvtBf16Other)?,
            _ => {}
        }
        let is_float = |t: Ty| matches!(t, Ty::F16 | Ty::Bf16 | Ty::F32 | Ty::F64 | Ty::Tf32);
        let ok = (to.is_int() || is_float(to)) && (from.is_int() || is_float(from));
        if !ok {
            return Err(self.unsupported(format!("cvt.{}.{}", to.name(), from.name())));
        }
        if from == Ty::Tf32 {
            return Err(self.unsupported(format!("cvt.{}.tf32", to.name())));
        }
        if to == Ty::Tf32 && from != Ty::F32 {
            return Err(self.unsupported(format!("cvt.tf32.{}", from.name())));
        }
        let rnd = match (frnd, irnd) {
            (Some(r), None) => CvtRound::Float(r),
            (None, Some(r)) => CvtRound::Integer(r),
            _ => CvtRound::None,
        };
        // Which rounding a conversion needs, per the PTX ISA.
        let needs_float_rnd = is_float(to)
            && (from.is_int() || (is_float(from) && to.bits() < from.bits()) || to == Ty::Tf32);
        let needs_int_rnd = to.is_int() && is_float(from);
        match rnd {
            CvtRound::None if needs_float_rnd || needs_int_rnd => {
                return Err(self.err_parse(format!(
                    "cvt.{}.{} needs a rounding modifier",
                    to.name(),
                    from.name()
                )))
            }
            CvtRound::Float(r) if !needs_float_rnd => {
                let _ = r;
                return Err(self.unsupported(format!(
                    "float rounding on cvt.{}.{}",
                    to.name(),
                    from.name()
                )));
            }
            CvtRound::Float(Rounding::NearestAway) if to != Ty::Tf32 => {
                return Err(self.err_parse(".rna is only for cvt.tf32.f32"))
            }
            CvtRound::Integer(_) if !(needs_int_rnd || (is_float(to) && to == from)) => {
                return Err(self.unsupported(format!(
                    "integer rounding on cvt.{}.{}",
                    to.name(),
                    from.name()
                )))
            }
            _ => {}
        }
        let d = self.dst(&ops[0])?;
        let dst_bits = self.reg_bits_of(d);
        let src_ty = if from == Ty::Tf32 { Ty::B32 } else { from };
        Ok(Op::Cvt {
            d,
            a: self.src(&ops[1], src_ty)?,
            to,
            from,
            rnd,
            sat,
            satfinite,
            ftz,
            relu,
            dst_bits,
        })
    }

    fn float_mods(&self, mods: &mut Mods, prec_ty: Ty) -> Result<(Rounding, bool, bool), Error> {
        let rnd = mods.rounding();
        let ftz = mods.has("ftz");
        let sat = mods.has("sat");
        if prec_ty == Ty::F64 && (ftz || sat) {
            return Err(self.unsupported(".ftz/.sat on f64"));
        }
        let rnd = rnd.unwrap_or(Rounding::NearestEven);
        if rnd == Rounding::NearestAway {
            return Err(self.err_parse(".rna is only valid on cvt"));
        }
        if prec_ty == Ty::F64 && rnd != Rounding::NearestEven {
            return Err(self.unsupported("directed rounding (.rz/.rm/.rp) on f64 arithmetic"));
        }
        Ok((rnd, ftz, sat))
    }

    fn decode_arith(&mut self, base: &str, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let tys = mods.types();
        let [ty] = tys[..] else {
            return Err(self.err_parse("expected exactly one type"));
        };
        self.expect_operands(ops, 3..=3)?;
        match ty {
            Ty::F32 | Ty::F64 => {
                let prec = if ty == Ty::F32 { Prec::F32 } else { Prec::F64 };
                if base == "div" {
                    if mods.has("approx") || mods.has("full") {
                        return Err(self.unsupported("div.approx / div.full (only the IEEE-rounded div.rn... is implemented)"));
                    }
                    if mods
                        .list
                        .iter()
                        .zip(&mods.used)
                        .all(|(m, u)| *u || !matches!(m.as_str(), "rn" | "rz" | "rm" | "rp"))
                    {
                        return Err(self.err_parse("div on floats needs a rounding modifier"));
                    }
                }
                if (base == "min" || base == "max") && (mods.has("NaN") || mods.has("xorsign")) {
                    return Err(self.unsupported("min/max .NaN or .xorsign"));
                }
                let (rnd, ftz, sat) = self.float_mods(mods, ty)?;
                let op = match base {
                    "add" => FloatOp::Add,
                    "sub" => FloatOp::Sub,
                    "mul" => FloatOp::Mul,
                    "div" => FloatOp::Div,
                    "min" => FloatOp::Min,
                    "max" => FloatOp::Max,
                    _ => return Err(self.unsupported(format!("{base} on .{}", ty.name()))),
                };
                Ok(Op::Float {
                    op,
                    prec,
                    rnd,
                    ftz,
                    sat,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                })
            }
            Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2 => {
                let rnd = mods.rounding();
                if rnd.is_some_and(|r| r != Rounding::NearestEven) {
                    return Err(self.unsupported("rounding other than .rn on f16/bf16 arithmetic"));
                }
                if mods.has("ftz") {
                    return Err(self.unsupported(".ftz on f16/bf16 arithmetic"));
                }
                let sat = mods.has("sat");
                let op = match base {
                    "add" => HalfOp::Add,
                    "sub" => HalfOp::Sub,
                    "mul" => HalfOp::Mul,
                    "min" => HalfOp::Min,
                    "max" => HalfOp::Max,
                    _ => return Err(self.unsupported(format!("{base} on .{}", ty.name()))),
                };
                let (fmt, packed) = half_kind(ty);
                let min_max = matches!(op, HalfOp::Min | HalfOp::Max);
                self.need(match (fmt, min_max) {
                    (HalfFmt::F16, true) => Feature::MinMaxF16,
                    (HalfFmt::Bf16, true) => Feature::Bf16Arith,
                    (HalfFmt::Bf16, false) => Feature::Bf16AddSubMul,
                    (HalfFmt::F16, false) => Feature::F16Arith,
                })?;
                if sat && (min_max || fmt == HalfFmt::Bf16) {
                    return Err(
                        self.err_parse(format!("`.sat` is not allowed on {base}.{}", ty.name()))
                    );
                }
                let bty = if packed { Ty::B32 } else { Ty::B16 };
                Ok(Op::Half {
                    op,
                    fmt,
                    packed,
                    sat,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], bty)?,
                    b: self.src(&ops[2], bty)?,
                    c: Src::Imm(0),
                })
            }
            _ if ty.is_int() && ty.bits() >= 16 => {
                let signed = ty.is_signed_int();
                let op = match base {
                    "add" if mods.has("sat") => {
                        if ty != Ty::S32 {
                            return Err(self.err_parse(".sat needs .s32"));
                        }
                        IntOp::AddSat
                    }
                    "sub" if mods.has("sat") => {
                        if ty != Ty::S32 {
                            return Err(self.err_parse(".sat needs .s32"));
                        }
                        IntOp::SubSat
                    }
                    "add" => IntOp::Add,
                    "sub" => IntOp::Sub,
                    "mul" => match mods.one_of(&["lo", "hi", "wide"]) {
                        Some("lo") => IntOp::MulLo,
                        Some("hi") => IntOp::MulHi,
                        Some(_) => {
                            if ty.bits() == 64 {
                                return Err(self.err_parse("mul.wide on 64-bit types"));
                            }
                            IntOp::MulWide
                        }
                        None => return Err(self.err_parse("integer mul needs .lo, .hi or .wide")),
                    },
                    "div" => IntOp::Div,
                    "rem" => IntOp::Rem,
                    "min" => IntOp::Min,
                    "max" => IntOp::Max,
                    _ => unreachable!("base is one of the arithmetic names"),
                };
                if mods.has("cc") {
                    return Err(self.unsupported("carry (.cc)"));
                }
                Ok(Op::Int {
                    op,
                    bits: ty.bits(),
                    signed,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                })
            }
            _ => Err(self.unsupported(format!("{base} on .{}", ty.name()))),
        }
    }

    fn decode_mad(&mut self, base: &str, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let tys = mods.types();
        let [ty] = tys[..] else {
            return Err(self.err_parse("expected exactly one type"));
        };
        self.expect_operands(ops, 4..=4)?;
        match ty {
            Ty::F32 | Ty::F64 => {
                if !mods
                    .list
                    .iter()
                    .any(|m| matches!(m.as_str(), "rn" | "rz" | "rm" | "rp"))
                {
                    return Err(
                        self.err_parse(format!("{base}.{} needs a rounding modifier", ty.name()))
                    );
                }
                let (rnd, ftz, sat) = self.float_mods(mods, ty)?;
                let prec = if ty == Ty::F32 { Prec::F32 } else { Prec::F64 };
                Ok(Op::Fma {
                    prec,
                    rnd,
                    ftz,
                    sat,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                    c: self.src(&ops[3], ty)?,
                })
            }
            Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2 if base == "fma" => {
                if mods.rounding() != Some(Rounding::NearestEven) {
                    return Err(self.err_parse("fma on f16/bf16 needs .rn"));
                }
                if mods.has("relu") || mods.has("ftz") || mods.has("oob") {
                    return Err(self.unsupported(".relu/.ftz/.oob on half-precision fma"));
                }
                let sat = mods.has("sat");
                let (fmt, packed) = half_kind(ty);
                if fmt == HalfFmt::Bf16 {
                    self.need(Feature::Bf16Arith)?;
                    if sat {
                        return Err(self.err_parse("`.sat` is not allowed on fma.bf16"));
                    }
                } else {
                    self.need(Feature::F16Arith)?;
                }
                let bty = if packed { Ty::B32 } else { Ty::B16 };
                Ok(Op::Half {
                    op: HalfOp::Fma,
                    fmt,
                    packed,
                    sat,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], bty)?,
                    b: self.src(&ops[2], bty)?,
                    c: self.src(&ops[3], bty)?,
                })
            }
            _ if base == "mad" && ty.is_int() && ty.bits() >= 16 => {
                let mode = match mods.one_of(&["lo", "hi", "wide"]) {
                    Some("lo") => MadMode::Lo,
                    Some("hi") => MadMode::Hi,
                    Some(_) => MadMode::Wide,
                    None => return Err(self.err_parse("integer mad needs .lo, .hi or .wide")),
                };
                if mods.has("sat") || mods.has("cc") {
                    return Err(self.unsupported("mad .sat/.cc"));
                }
                let signed = ty.is_signed_int();
                let cty = if mode == MadMode::Wide {
                    wide_of(ty)
                } else {
                    ty
                };
                Ok(Op::Mad {
                    mode,
                    bits: ty.bits(),
                    signed,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                    b: self.src(&ops[2], ty)?,
                    c: self.src(&ops[3], cty)?,
                })
            }
            _ => Err(self.unsupported(format!("{base} on .{}", ty.name()))),
        }
    }

    fn decode_unary(&mut self, base: &str, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let tys = mods.types();
        let [ty] = tys[..] else {
            return Err(self.err_parse("expected exactly one type"));
        };
        self.expect_operands(ops, 2..=2)?;
        match (base, ty) {
            ("not", Ty::Pred) => Ok(Op::PredNot {
                d: self.dst_pred(&ops[0])?,
                a: self.pred_src(&ops[1])?,
            }),
            ("abs" | "neg" | "sqrt" | "rcp", Ty::F32 | Ty::F64) => {
                if (base == "sqrt" || base == "rcp") && mods.has("approx") {
                    return Err(self.unsupported(format!(
                        "{base}.approx (only the IEEE-rounded {base}.rn is implemented)"
                    )));
                }
                if (base == "sqrt" || base == "rcp")
                    && !mods
                        .list
                        .iter()
                        .any(|m| matches!(m.as_str(), "rn" | "rz" | "rm" | "rp"))
                {
                    return Err(self.err_parse(format!("{base} needs a rounding modifier")));
                }
                let (rnd, ftz, sat) = self.float_mods(mods, ty)?;
                if sat {
                    return Err(self.err_parse(format!(".sat on {base}")));
                }
                let op = match base {
                    "abs" => FloatUnOp::Abs,
                    "neg" => FloatUnOp::Neg,
                    "sqrt" => FloatUnOp::Sqrt,
                    _ => FloatUnOp::Rcp,
                };
                let prec = if ty == Ty::F32 { Prec::F32 } else { Prec::F64 };
                Ok(Op::FloatUn {
                    op,
                    prec,
                    rnd,
                    ftz,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                })
            }
            ("abs" | "neg", Ty::F16 | Ty::F16x2 | Ty::Bf16 | Ty::Bf16x2) => {
                if mods.has("ftz") {
                    return Err(self.unsupported(".ftz on half-precision abs/neg"));
                }
                let (fmt, packed) = half_kind(ty);
                let bty = if packed { Ty::B32 } else { Ty::B16 };
                let op = if base == "abs" {
                    HalfOp::Abs
                } else {
                    HalfOp::Neg
                };
                self.need(match (fmt, op) {
                    (HalfFmt::Bf16, _) => Feature::Bf16Arith,
                    (HalfFmt::F16, HalfOp::Abs) => Feature::AbsF16,
                    _ => Feature::NegF16,
                })?;
                Ok(Op::Half {
                    op,
                    fmt,
                    packed,
                    sat: false,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], bty)?,
                    b: Src::Imm(0),
                    c: Src::Imm(0),
                })
            }
            ("abs" | "neg", _) if ty.is_signed_int() && ty.bits() >= 16 => {
                let op = if base == "abs" {
                    IntUnOp::Abs
                } else {
                    IntUnOp::Neg
                };
                Ok(Op::IntUn {
                    op,
                    bits: ty.bits(),
                    signed: true,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                })
            }
            ("not" | "cnot", _) if ty.is_int() && ty.bits() >= 16 => {
                let op = if base == "not" {
                    IntUnOp::Not
                } else {
                    IntUnOp::Cnot
                };
                Ok(Op::IntUn {
                    op,
                    bits: ty.bits(),
                    signed: false,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                })
            }
            ("popc" | "clz" | "brev", Ty::B32 | Ty::B64) => {
                let op = match base {
                    "popc" => IntUnOp::Popc,
                    "clz" => IntUnOp::Clz,
                    _ => IntUnOp::Brev,
                };
                Ok(Op::IntUn {
                    op,
                    bits: ty.bits(),
                    signed: false,
                    d: self.dst(&ops[0])?,
                    a: self.src(&ops[1], ty)?,
                })
            }
            _ => Err(self.unsupported(format!("{base} on .{}", ty.name()))),
        }
    }

    fn decode_setp(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let cmp = match mods.one_of(&[
            "eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "equ", "neu", "ltu", "leu",
            "gtu", "geu", "num", "nan",
        ]) {
            Some(c) => match c {
                "eq" => Cmp::Eq,
                "ne" => Cmp::Ne,
                "lt" => Cmp::Lt,
                "le" => Cmp::Le,
                "gt" => Cmp::Gt,
                "ge" => Cmp::Ge,
                "lo" => Cmp::Lo,
                "ls" => Cmp::Ls,
                "hi" => Cmp::Hi,
                "hs" => Cmp::Hs,
                "equ" => Cmp::Equ,
                "neu" => Cmp::Neu,
                "ltu" => Cmp::Ltu,
                "leu" => Cmp::Leu,
                "gtu" => Cmp::Gtu,
                "geu" => Cmp::Geu,
                "num" => Cmp::Num,
                _ => Cmp::Nan,
            },
            None => return Err(self.err_parse("setp needs a comparison")),
        };
        let bool_op = mods.one_of(&["and", "or", "xor"]).map(|b| match b {
            "and" => BoolOp::And,
            "or" => BoolOp::Or,
            _ => BoolOp::Xor,
        });
        let ftz = mods.has("ftz");
        let ty = self.one_type(mods)?;
        let is_float = matches!(ty, Ty::F32 | Ty::F64);
        if !(is_float || (ty.is_int() && ty.bits() >= 16)) {
            return Err(self.unsupported(format!("setp on .{}", ty.name())));
        }
        let float_only = matches!(
            cmp,
            Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu | Cmp::Num | Cmp::Nan
        );
        let unsigned_only = matches!(cmp, Cmp::Lo | Cmp::Ls | Cmp::Hi | Cmp::Hs);
        if (float_only && !is_float) || (unsigned_only && is_float) {
            return Err(self.err_parse(format!("comparison not valid for .{}", ty.name())));
        }
        self.expect_operands(ops, if bool_op.is_some() { 4..=4 } else { 3..=3 })?;
        let (p, q) = match &ops[0] {
            Operand::PredPair(p, q) => (Some(self.pred_reg(p)?), Some(self.pred_reg(q)?)),
            Operand::Sink => (None, None),
            other => (Some(self.dst_pred(other)?), None),
        };
        let combine = match bool_op {
            Some(b) => Some((b, self.pred_src(&ops[3])?)),
            None => None,
        };
        Ok(Op::Setp {
            cmp,
            ty,
            ftz,
            p,
            q,
            a: self.src(&ops[1], ty)?,
            b: self.src(&ops[2], ty)?,
            combine,
        })
    }

    fn decode_bar(&mut self, is_bar: bool, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        if !is_bar {
            self.need(Feature::WarpSync)?;
        }
        if mods.has("warp") {
            if !mods.has("sync") {
                return Err(self.err_parse("bar.warp needs .sync"));
            }
            self.need(Feature::WarpSync)?;
            self.expect_operands(ops, 1..=1)?;
            return Ok(Op::BarWarp {
                mask: self.src(&ops[0], Ty::B32)?,
            });
        }
        if mods.has("cta") {
            self.need(Feature::BarrierCta)?;
        }
        if mods.one_of(&["arrive", "red"]).is_some() {
            return Err(self.unsupported("bar.arrive / bar.red"));
        }
        if !mods.has("sync") {
            return Err(self.unsupported("a barrier other than bar.sync / barrier.sync"));
        }
        let aligned = mods.has("aligned") || is_bar;
        self.expect_operands(ops, 1..=2)?;
        let id = self.src(&ops[0], Ty::U32)?;
        let count = if ops.len() == 2 {
            Some(self.src(&ops[1], Ty::U32)?)
        } else {
            None
        };
        Ok(Op::Bar { id, count, aligned })
    }

    fn decode_shfl(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        if !mods.has("sync") {
            return Err(self.unsupported("shfl without .sync (deprecated, sm_6x only)"));
        }
        self.need(Feature::WarpSync)?;
        let mode = match mods.one_of(&["up", "down", "bfly", "idx"]) {
            Some("up") => ShflMode::Up,
            Some("down") => ShflMode::Down,
            Some("bfly") => ShflMode::Bfly,
            Some(_) => ShflMode::Idx,
            None => return Err(self.err_parse("shfl needs .up, .down, .bfly or .idx")),
        };
        let ty = self.one_type(mods)?;
        if ty != Ty::B32 {
            return Err(self.unsupported(format!("shfl of .{}", ty.name())));
        }
        self.expect_operands(ops, 5..=5)?;
        let (d, p) = match &ops[0] {
            Operand::PredPair(d, p) => (self.data_reg(d)?, Some(self.pred_reg(p)?)),
            other => (self.dst(other)?, None),
        };
        Ok(Op::Shfl {
            mode,
            d,
            p,
            a: self.src(&ops[1], Ty::B32)?,
            b: self.src(&ops[2], Ty::B32)?,
            c: self.src(&ops[3], Ty::B32)?,
            mask: self.src(&ops[4], Ty::B32)?,
        })
    }

    fn decode_vote(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        if !mods.has("sync") {
            return Err(self.unsupported("vote without .sync"));
        }
        self.need(Feature::WarpSync)?;
        let mode = match mods.one_of(&["all", "any", "uni", "ballot"]) {
            Some("all") => VoteMode::All,
            Some("any") => VoteMode::Any,
            Some("uni") => VoteMode::Uni,
            Some(_) => VoteMode::Ballot,
            None => return Err(self.err_parse("vote needs a mode")),
        };
        let ty = self.one_type(mods)?;
        self.expect_operands(ops, 3..=3)?;
        let (d, dp) = if mode == VoteMode::Ballot {
            if ty != Ty::B32 {
                return Err(self.err_parse("vote.ballot needs .b32"));
            }
            (self.dst(&ops[0])?, None)
        } else {
            if ty != Ty::Pred {
                return Err(self.err_parse("vote.all/any/uni need .pred"));
            }
            (self.sink(), Some(self.dst_pred(&ops[0])?))
        };
        Ok(Op::Vote {
            mode,
            d,
            dp,
            a: self.pred_src(&ops[1])?,
            mask: self.src(&ops[2], Ty::B32)?,
        })
    }

    fn decode_atom(&mut self, is_red: bool, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let space = self.space(mods)?.unwrap_or(Space::Generic);
        if !matches!(space, Space::Global | Space::Shared | Space::Generic) {
            return Err(self.unsupported(format!("atomics on .{}", space.name())));
        }
        if ["relaxed", "acquire", "release", "acq_rel"]
            .iter()
            .any(|m| mods.present(m))
        {
            self.need(Feature::MemoryOrder)?;
        }
        if ["cta", "gpu", "sys"].iter().any(|m| mods.present(m)) {
            self.need(Feature::AtomScope)?;
        }
        let strength = if mods.present("cta") {
            Strength::Cta
        } else {
            Strength::Gpu
        };
        mods.accept_all(&[
            "relaxed", "acquire", "release", "acq_rel", "cta", "gpu", "sys",
        ]);
        let op = match mods.one_of(&[
            "add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas",
        ]) {
            Some(o) => match o {
                "add" => AtomOp::Add,
                "min" => AtomOp::Min,
                "max" => AtomOp::Max,
                "inc" => AtomOp::Inc,
                "dec" => AtomOp::Dec,
                "and" => AtomOp::And,
                "or" => AtomOp::Or,
                "xor" => AtomOp::Xor,
                "exch" => AtomOp::Exch,
                _ => AtomOp::Cas,
            },
            None => return Err(self.unsupported("this atomic operation")),
        };
        if mods.has("noftz")
            || mods.one_of(&["v2", "v4", "v8"]).is_some()
            || mods.has("L2::cache_hint")
        {
            return Err(self.unsupported("vector, .noftz or cache-hinted atomics"));
        }
        let ty = self.one_type(mods)?;
        let ok = match op {
            AtomOp::Add => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::F32 | Ty::F64),
            AtomOp::Min | AtomOp::Max => matches!(ty, Ty::U32 | Ty::S32 | Ty::U64 | Ty::S64),
            AtomOp::Inc | AtomOp::Dec => ty == Ty::U32,
            AtomOp::And | AtomOp::Or | AtomOp::Xor => matches!(ty, Ty::B32 | Ty::B64),
            AtomOp::Exch | AtomOp::Cas => matches!(ty, Ty::B32 | Ty::B64),
        };
        if !ok {
            return Err(self.unsupported(format!("atom/red {op:?} on .{}", ty.name())));
        }
        if op == AtomOp::Add && ty == Ty::F64 {
            self.need(Feature::AtomAddF64)?;
        }
        let nops = if is_red {
            2
        } else if op == AtomOp::Cas {
            4
        } else {
            3
        };
        if is_red && op == AtomOp::Cas {
            return Err(self.err_parse("red has no .cas"));
        }
        self.expect_operands(ops, nops..=nops)?;
        let (d, rest) = if is_red {
            (None, ops)
        } else {
            (Some(self.dst(&ops[0])?), &ops[1..])
        };
        let addr = self.addr(&rest[0], space)?;
        let b = self.src(&rest[1], ty)?;
        let c = if op == AtomOp::Cas {
            Some(self.src(&rest[2], ty)?)
        } else {
            None
        };
        Ok(Op::Atom {
            space,
            op,
            ty,
            strength,
            d,
            addr,
            b,
            c,
        })
    }

    fn decode_cp(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        if !mods.has("async") {
            return Err(self.unsupported("cp without .async"));
        }
        self.need(Feature::CpAsync)?;
        if mods.has("commit_group") {
            self.expect_operands(ops, 0..=0)?;
            return Ok(Op::CpAsyncCommit);
        }
        if mods.has("wait_all") {
            self.expect_operands(ops, 0..=0)?;
            return Ok(Op::CpAsyncWait {
                groups: 0,
                commit_first: true,
            });
        }
        if mods.has("wait_group") {
            self.expect_operands(ops, 1..=1)?;
            let Src::Imm(n) = self.src(&ops[0], Ty::U32)? else {
                return Err(self.err_parse("wait_group needs an immediate"));
            };
            return Ok(Op::CpAsyncWait {
                groups: n as u32,
                commit_first: false,
            });
        }
        if mods.has("bulk") {
            return self.decode_bulk(mods, ops);
        }
        if mods.has("mbarrier") {
            return Err(self.unsupported("cp.async.mbarrier.arrive"));
        }
        let level = mods
            .one_of(&["ca", "cg"])
            .ok_or_else(|| self.err_parse("cp.async needs .ca or .cg"))?;
        if !(mods.has("shared") || mods.has("shared::cta")) || !mods.has("global") {
            return Err(self.err_parse("cp.async needs .shared.global"));
        }
        if mods.present("L2::64B") || mods.present("L2::128B") {
            self.need(Feature::PrefetchSize)?;
        }
        if mods.present("L2::256B") {
            self.need(Feature::PrefetchSize256)?;
        }
        mods.accept_all(&["L2::64B", "L2::128B", "L2::256B"]);
        let policy = mods.has("L2::cache_hint");
        if policy {
            self.need(Feature::L2CacheHint)?;
        }
        let nops_max = 4 + policy as usize;
        self.expect_operands(ops, 3..=nops_max)?;
        let dst = self.addr(&ops[0], Space::Shared)?;
        let src = self.addr(&ops[1], Space::Global)?;
        let Src::Imm(cp_bytes) = self.src(&ops[2], Ty::U32)? else {
            return Err(self.err_parse("cp-size must be an immediate"));
        };
        let cp_bytes = cp_bytes as u32;
        if !matches!(cp_bytes, 4 | 8 | 16) || (level == "cg" && cp_bytes != 16) {
            return Err(self.err_parse(format!("cp-size {cp_bytes} not allowed with .{level}")));
        }
        let mut src_bytes = None;
        let mut ignore_src = None;
        let extra = &ops[3..ops.len() - policy as usize];
        if let Some(op) = extra.first() {
            let is_pred = matches!(op, Operand::NotName(_))
                || matches!(op, Operand::Name(n) if matches!(self.lookup(n), Some(Name::Pred(_))));
            if is_pred {
                self.need(Feature::CpAsyncIgnoreSrc)?;
                ignore_src = Some(self.pred_src(op)?);
            } else {
                src_bytes = Some(self.src(op, Ty::U32)?);
            }
        }
        if policy {
            self.src(&ops[ops.len() - 1], Ty::B64)?;
        }
        Ok(Op::CpAsync {
            dst,
            src,
            cp_bytes,
            src_bytes,
            ignore_src,
        })
    }

    /// `mbarrier.{init,arrive,expect_tx,test_wait,try_wait,inval}`.
    fn decode_mbarrier(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        self.need(Feature::Mbarrier)?;
        let sem = mods.one_of(&["acquire", "release", "relaxed"]);
        let scope = mods.one_of(&["cta", "cluster"]);
        if sem.is_some() || scope.is_some() {
            self.need(Feature::MbarrierSemScope)?;
        }
        if mods.present("shared::cta") {
            self.need(Feature::SharedCta)?;
        }
        let remote = mods.has("shared::cluster");
        let generic = !remote && mods.one_of(&["shared::cta", "shared"]).is_none();
        if remote {
            self.need(Feature::MbarrierCluster)?;
        }
        if !mods.has("b64") {
            return Err(self.err_parse("mbarrier needs .b64"));
        }
        let space = if generic {
            Space::Generic
        } else {
            Space::Shared
        };
        let op = mods
            .one_of(&[
                "init",
                "arrive",
                "expect_tx",
                "test_wait",
                "try_wait",
                "inval",
            ])
            .ok_or_else(|| self.unsupported("this mbarrier operation"))?;
        if remote && op != "arrive" {
            return Err(self.unsupported(format!(
                "mbarrier.{op} on .shared::cluster (only arrive may name another CTA's barrier)"
            )));
        }
        Ok(match op {
            "init" => {
                self.expect_operands(ops, 2..=2)?;
                Op::MbarInit {
                    addr: self.addr(&ops[0], space)?,
                    generic,
                    count: self.src(&ops[1], Ty::U32)?,
                }
            }
            "arrive" => {
                let expect = mods.has("expect_tx");
                if expect {
                    self.need(Feature::MbarrierExpectTx)?;
                    self.expect_operands(ops, 3..=3)?;
                } else {
                    self.expect_operands(ops, 2..=3)?;
                    if ops.len() == 3 {
                        self.need(Feature::MbarrierArriveCount)?;
                    }
                }
                let d = if ops[0] == Operand::Sink {
                    self.need(Feature::MbarrierArriveSink)?;
                    None
                } else if remote {
                    return Err(self.err_parse(
                        "mbarrier.arrive on .shared::cluster returns no state: its destination must be `_`",
                    ));
                } else {
                    Some(self.dst(&ops[0])?)
                };
                let third = ops.get(2).map(|o| self.src(o, Ty::U32)).transpose()?;
                Op::MbarArrive {
                    d,
                    addr: self.addr(&ops[1], space)?,
                    generic,
                    remote,
                    count: if expect { None } else { third },
                    expect_tx: if expect { third } else { None },
                }
            }
            "expect_tx" => {
                self.need(Feature::MbarrierExpectTx)?;
                self.expect_operands(ops, 2..=2)?;
                Op::MbarExpectTx {
                    addr: self.addr(&ops[0], space)?,
                    generic,
                    tx: self.src(&ops[1], Ty::U32)?,
                }
            }
            "test_wait" | "try_wait" => {
                let parity = mods.has("parity");
                if op == "try_wait" {
                    self.need(Feature::MbarrierTryWait)?;
                    self.expect_operands(ops, 3..=4)?;
                } else {
                    if parity {
                        self.need(Feature::MbarrierTestWaitParity)?;
                    }
                    self.expect_operands(ops, 3..=3)?;
                }
                Op::MbarWait {
                    p: self.dst_pred(&ops[0])?,
                    addr: self.addr(&ops[1], space)?,
                    generic,
                    parity,
                    operand: self.src(&ops[2], if parity { Ty::U32 } else { Ty::B64 })?,
                    hint: ops.get(3).map(|o| self.src(o, Ty::U32)).transpose()?,
                }
            }
            _ => {
                self.expect_operands(ops, 1..=1)?;
                Op::MbarInval {
                    addr: self.addr(&ops[0], space)?,
                    generic,
                }
            }
        })
    }

    /// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes` and its `.tensor.2d`
    /// form (global to shared, completing on an mbarrier of this CTA).
    fn decode_bulk(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        let tensor = mods.has("tensor");
        self.need(if tensor {
            Feature::CpAsyncBulkTensor
        } else {
            Feature::CpAsyncBulk
        })?;
        if !mods.has("shared::cluster") || !mods.has("global") {
            return Err(self.unsupported(
                "cp.async.bulk other than .shared::cluster.global (global to this CTA's shared memory)",
            ));
        }
        if !mods.has("mbarrier::complete_tx::bytes") {
            return Err(self.unsupported("cp.async.bulk without .mbarrier::complete_tx::bytes"));
        }
        let policy = mods.has("L2::cache_hint");
        if policy {
            self.need(Feature::L2CacheHint)?;
        }
        let p = policy as usize;
        if tensor {
            if !mods.has("2d") {
                return Err(self.unsupported("cp.async.bulk.tensor other than .2d"));
            }
            mods.has("tile");
            let multicast = mods.has("multicast::cluster");
            if multicast {
                self.need(Feature::BulkMulticast)?;
            }
            let m = multicast as usize;
            self.expect_operands(ops, 3 + m + p..=3 + m + p)?;
            let Operand::Tensor { base, offset, rest } = &ops[1] else {
                return Err(self.err_parse("expected `[tensorMap, {c0, c1}]`"));
            };
            let coords = match rest.as_slice() {
                [Operand::Vector(c)] if c.len() == 2 => c
                    .iter()
                    .map(|o| self.src(o, Ty::S32))
                    .collect::<Result<Vec<_>, _>>()?,
                _ => return Err(self.err_parse(".2d takes two coordinates `{c0, c1}`")),
            };
            if base
                .as_ref()
                .is_some_and(|b| self.params.iter().any(|q| &q.name == b))
            {
                return Err(self.err_parse(
                    "the tensor map is a generic address (`mov.u64 %rd, param; cvta.param.u64 %rd, %rd;`), not a parameter name",
                ));
            }
            let tmap = self.addr(
                &Operand::Addr {
                    base: base.clone(),
                    offset: *offset,
                },
                Space::Generic,
            )?;
            let multicast = if multicast {
                Some(self.src(&ops[3], Ty::B16)?)
            } else {
                None
            };
            if policy {
                self.src(&ops[3 + m], Ty::B64)?;
            }
            return Ok(Op::BulkTensor {
                dst: self.addr(&ops[0], Space::Shared)?,
                tmap,
                coords,
                mbar: self.addr(&ops[2], Space::Shared)?,
                multicast,
            });
        }
        self.expect_operands(ops, 4 + p..=4 + p)?;
        if policy {
            self.src(&ops[4], Ty::B64)?;
        }
        Ok(Op::BulkCopy {
            dst: self.addr(&ops[0], Space::Shared)?,
            src: self.addr(&ops[1], Space::Global)?,
            size: self.src(&ops[2], Ty::U32)?,
            mbar: self.addr(&ops[3], Space::Shared)?,
        })
    }

    fn decode_ldmatrix(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        self.need(Feature::Ldmatrix)?;
        if !mods.has("sync") || !mods.has("aligned") {
            return Err(self.err_parse("ldmatrix needs .sync.aligned"));
        }
        if !mods.has("m8n8") {
            return Err(self.unsupported("ldmatrix shapes other than .m8n8"));
        }
        let num = match mods.one_of(&["x1", "x2", "x4"]) {
            Some("x1") => 1,
            Some("x2") => 2,
            Some(_) => 4,
            None => return Err(self.err_parse("ldmatrix needs .x1, .x2 or .x4")),
        };
        let trans = mods.has("trans");
        let space = self.space(mods)?.unwrap_or(Space::Generic);
        if !matches!(space, Space::Shared | Space::Generic) {
            return Err(self.err_parse("ldmatrix reads shared memory"));
        }
        let ty = self.one_type(mods)?;
        if ty != Ty::B16 {
            return Err(self.unsupported(format!("ldmatrix of .{}", ty.name())));
        }
        self.expect_operands(ops, 2..=2)?;
        let ds = self.vec_dsts(&ops[0])?;
        if ds.len() != num as usize {
            return Err(self.err_parse(format!(
                "ldmatrix .x{num} needs {num} destination registers"
            )));
        }
        Ok(Op::Ldmatrix {
            space,
            num,
            trans,
            ds,
            addr: self.addr(&ops[1], space)?,
        })
    }

    fn decode_mma(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        if !mods.has("sync") || !mods.has("aligned") {
            return Err(self.err_parse("mma needs .sync.aligned"));
        }
        let shape = match mods.one_of(&["m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16", "m16n8k32"]) {
            Some("m8n8k4") => MmaShape::M8n8k4,
            Some("m16n8k4") => MmaShape::M16n8k4,
            Some("m16n8k8") => MmaShape::M16n8k8,
            Some("m16n8k16") => MmaShape::M16n8k16,
            Some(_) => MmaShape::M16n8k32,
            None => return Err(self.unsupported("this mma shape")),
        };
        // The first layout modifier is A's, the second B's (ptxas: "Illegal alayout '.col'").
        let layouts: Vec<&str> = mods
            .list
            .iter()
            .filter(|m| matches!(m.as_str(), "row" | "col"))
            .map(String::as_str)
            .collect();
        let half_m8n8k4 = shape == MmaShape::M8n8k4 && mods.list.iter().any(|m| m == "f16");
        if half_m8n8k4 {
            // The one form whose layouts the ISA leaves free; ptxsim does not run it.
            return Err(self.unsupported("mma.m8n8k4 with .f16 (the sm_70 shape)"));
        }
        if layouts != ["row", "col"] {
            // "mma.m16n8k*" / "mma.m8n8k4 .f64": ".alayout = .row; .blayout = .col" only.
            return Err(self.err_parse(format!(
                "the PTX ISA allows only `.row.col` (A row-major, B column-major) for mma.{}, not `.{}`",
                shape.name(),
                layouts.join(".")
            )));
        }
        mods.has("row");
        mods.has("col");
        let satfinite = mods.has("satfinite");
        if mods.has("sp")
            || mods
                .one_of(&["kind::f8f6f4", "kind::mxf4", "block_scale"])
                .is_some()
        {
            return Err(self.unsupported("sparse or block-scaled mma"));
        }
        let tys = mods.types();
        let [dtype, atype, btype, ctype] = tys[..] else {
            return Err(self.err_parse("mma needs four types: .dtype.atype.btype.ctype"));
        };
        let layout =
            crate::mma::Layout::new(shape, atype, btype, ctype, dtype).ok_or_else(|| {
                self.unsupported(format!(
                    "mma {shape:?} .{}.{}.{}.{}",
                    dtype.name(),
                    atype.name(),
                    btype.name(),
                    ctype.name()
                ))
            })?;
        if satfinite && !matches!(dtype, Ty::S32) {
            return Err(self.unsupported(".satfinite on a float mma"));
        }
        for feature in mma_features(shape, atype, ctype) {
            self.need(feature)?;
        }
        self.expect_operands(ops, 4..=4)?;
        let d = self.vec_dsts(&ops[0])?;
        let a = self.vec_srcs(&ops[1], Ty::B32)?;
        let b = self.vec_srcs(&ops[2], Ty::B32)?;
        let c = self.vec_srcs(&ops[3], Ty::B32)?;
        let want = layout.register_counts();
        let got = (a.len(), b.len(), c.len(), d.len());
        if got != want {
            return Err(self.err_parse(format!(
                "mma operand sizes (A {}, B {}, C {}, D {} registers) do not match the shape and types (A {}, B {}, C {}, D {})",
                got.0, got.1, got.2, got.3, want.0, want.1, want.2, want.3
            )));
        }
        Ok(Op::Mma(Box::new(MmaInst {
            shape,
            dtype,
            atype,
            btype,
            ctype,
            satfinite,
            d,
            a,
            b,
            c,
        })))
    }
}

impl Builder<'_> {
    /// `wgmma.fence`, `wgmma.commit_group`, `wgmma.wait_group N`, `wgmma.mma_async` (PTX ISA,
    /// "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"), in the forms
    /// of the ISA's syntax: every operand the form lists is required.
    fn decode_wgmma(&mut self, mods: &mut Mods, ops: &[Operand]) -> Result<Op, Error> {
        if !mods.has("sync") || !mods.has("aligned") {
            return Err(self.err_parse("wgmma needs .sync.aligned"));
        }
        if mods.has("fence") {
            self.need(Feature::WgmmaSync)?;
            self.expect_operands(ops, 0..=0)?;
            return Ok(Op::WgmmaFence);
        }
        if mods.has("commit_group") {
            self.need(Feature::WgmmaSync)?;
            self.expect_operands(ops, 0..=0)?;
            return Ok(Op::WgmmaCommit);
        }
        if mods.has("wait_group") {
            self.need(Feature::WgmmaSync)?;
            self.expect_operands(ops, 1..=1)?;
            let Operand::Imm(Lit::Int(n)) = ops[0] else {
                return Err(self.err_parse("wgmma.wait_group needs an immediate integer"));
            };
            let groups = u32::try_from(n)
                .map_err(|_| self.err_parse(format!("wgmma.wait_group {n}: out of range")))?;
            return Ok(Op::WgmmaWait { groups });
        }
        if !mods.has("mma_async") {
            return Err(self.unsupported("this wgmma instruction"));
        }
        if mods.has("sp") {
            return Err(self.unsupported("sparse wgmma (.sp)"));
        }
        self.need(Feature::WgmmaMmaAsync)?;
        let shape_mod = mods
            .list
            .iter()
            .zip(&mods.used)
            .find(|(m, u)| !**u && m.starts_with('m') && m.contains('n') && m.contains('k'))
            .map(|(m, _)| m.clone())
            .ok_or_else(|| self.err_parse("wgmma.mma_async needs a shape .m64nNkK"))?;
        mods.has(&shape_mod);
        let parsed = shape_mod.strip_prefix("m64n").and_then(|rest| {
            let (n, k) = rest.split_once('k')?;
            Some((n.parse::<u32>().ok()?, k.parse::<u32>().ok()?))
        });
        let Some((n, k)) = parsed else {
            return Err(self.err_parse(format!("`.{shape_mod}`: wgmma shapes are .m64nNkK")));
        };
        let satfinite = mods.has("satfinite");
        let tys = mods.types();
        let [dtype, atype, btype] = tys[..] else {
            return Err(self.err_parse("wgmma.mma_async needs three types: .dtype.atype.btype"));
        };
        let is_fp8 = |t: Ty| matches!(t, Ty::E4m3 | Ty::E5m2);
        let is_int = |t: Ty| matches!(t, Ty::S8 | Ty::U8);
        // (K of the type, whether this type combination exists, N allowed)
        let (want_k, types_ok, family) = if atype == Ty::F16 && btype == Ty::F16 {
            (16, matches!(dtype, Ty::F16 | Ty::F32), "f16")
        } else if atype == Ty::Bf16 && btype == Ty::Bf16 {
            (16, dtype == Ty::F32, "bf16")
        } else if atype == Ty::Tf32 && btype == Ty::Tf32 {
            (8, dtype == Ty::F32, "tf32")
        } else if is_fp8(atype) && is_fp8(btype) {
            (32, matches!(dtype, Ty::F16 | Ty::F32), "fp8")
        } else if is_int(atype) && is_int(btype) {
            (32, dtype == Ty::S32, "int")
        } else {
            (0, false, "")
        };
        if !types_ok {
            return Err(self.err_parse(format!(
                "wgmma.mma_async has no form .{}.{}.{} (PTX ISA: .f16 -> .f16/.f32, .bf16/.tf32 -> .f32, .e4m3/.e5m2 -> .f16/.f32, .s8/.u8 -> .s32)",
                dtype.name(),
                atype.name(),
                btype.name()
            )));
        }
        let n_ok = if family == "int" {
            matches!(n, 8 | 16 | 24) || (n % 16 == 0 && (32..=256).contains(&n))
        } else {
            n % 8 == 0 && (8..=256).contains(&n)
        };
        if k != want_k || !n_ok {
            return Err(self.err_parse(format!(
                "`.{shape_mod}` is not a wgmma shape for .{}: K must be {want_k} and N {}",
                atype.name(),
                if family == "int" {
                    "8, 16, 24 or a multiple of 16 from 32 to 256"
                } else {
                    "a multiple of 8 from 8 to 256"
                }
            )));
        }
        if family == "int" && atype != btype {
            self.need(Feature::WgmmaMixedInt)?;
        }
        if satfinite && family != "int" {
            return Err(self.err_parse(".satfinite is for the integer wgmma.mma_async only"));
        }
        let a_regs_form = matches!(ops.get(1), Some(Operand::Vector(_)));
        // d, a, b-desc, scale-d, then imm-scale-a, imm-scale-b (floating types), then
        // imm-trans-a (descriptor A only) and imm-trans-b (.f16/.bf16 only).
        let want_ops = match family {
            "int" => 4,
            "tf32" | "fp8" => 6,
            _ if a_regs_form => 7,
            _ => 8,
        };
        if ops.len() != want_ops {
            return Err(self.err_parse(format!(
                "wgmma.mma_async .{}.{}.{} with A from {} takes {want_ops} operands (d, a, b-desc, scale-d{}), not {}",
                dtype.name(),
                atype.name(),
                btype.name(),
                if a_regs_form { "registers" } else { "a descriptor" },
                match want_ops {
                    4 => "",
                    6 => ", imm-scale-a, imm-scale-b",
                    7 => ", imm-scale-a, imm-scale-b, imm-trans-b",
                    _ => ", imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b",
                },
                ops.len()
            )));
        }
        let imm = |b: &Self, op: &Operand, what: &str, allowed: &[i128]| -> Result<i128, Error> {
            match op {
                Operand::Imm(Lit::Int(v)) if allowed.contains(v) => Ok(*v),
                other => Err(b.err_parse(format!(
                    "{what} must be an immediate {}, found {other:?}",
                    allowed
                        .iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                ))),
            }
        };
        let (mut neg_a, mut neg_b) = (false, false);
        if want_ops >= 6 {
            neg_a = imm(self, &ops[4], "imm-scale-a", &[1, -1])? == -1;
            neg_b = imm(self, &ops[5], "imm-scale-b", &[1, -1])? == -1;
        }
        for (i, op) in ops.iter().enumerate().skip(6) {
            let what = if want_ops == 8 && i == 6 {
                "imm-trans-a"
            } else {
                "imm-trans-b"
            };
            if imm(self, op, what, &[0, 1])? == 1 {
                return Err(self.unsupported(format!(
                    "{what} = 1 (an MN-major, transposed, operand in shared memory): ptxsim implements K-major wgmma operands only"
                )));
            }
        }
        let d = self.vec_dsts(&ops[0])?;
        let want_d = if dtype == Ty::F16 { n / 4 } else { n / 2 } as usize;
        if d.len() != want_d {
            return Err(self.err_parse(format!(
                "wgmma.mma_async .m64n{n}k{k}.{}: d has {} registers, the shape needs {want_d} per thread",
                dtype.name(),
                d.len()
            )));
        }
        for &r in &d {
            if self.reg_bits_of(r) != 32 {
                return Err(self.err_parse("wgmma.mma_async accumulators are 32-bit registers"));
            }
        }
        let a = if a_regs_form {
            let v = self.vec_srcs(&ops[1], Ty::B32)?;
            if v.len() != 4 {
                return Err(self.err_parse(format!(
                    "wgmma.mma_async with A from registers takes 4 registers of A, not {}",
                    v.len()
                )));
            }
            for s in &v {
                match s {
                    Src::Reg(r) if self.reg_bits_of(*r) == 32 => {}
                    _ => return Err(self.err_parse("the A fragment is four 32-bit registers")),
                }
            }
            WgmmaA::Regs(v)
        } else {
            WgmmaA::Desc(self.desc_src(&ops[1], "a-desc")?)
        };
        let b_desc = self.desc_src(&ops[2], "b-desc")?;
        let scale_d = match &ops[3] {
            Operand::Imm(Lit::Int(v)) if matches!(v, 0 | 1) => ScaleD::Imm(*v == 1),
            other => ScaleD::Pred(self.pred_src(other)?),
        };
        Ok(Op::Wgmma(Box::new(WgmmaInst {
            n,
            k,
            dtype,
            atype,
            btype,
            satfinite,
            d,
            a,
            b_desc,
            scale_d,
            neg_a,
            neg_b,
        })))
    }

    /// A 64-bit matrix descriptor operand: a 64-bit register or an immediate.
    fn desc_src(&mut self, op: &Operand, what: &str) -> Result<Src, Error> {
        let s = self.src(op, Ty::B64)?;
        if let Src::Reg(r) = s {
            if self.reg_bits_of(r) != 64 {
                return Err(self.err_parse(format!("{what} is a 64-bit register")));
            }
        }
        Ok(s)
    }
}

/// How strong an ld/st is in the memory model (PTX ISA, "Memory Consistency Model: Operation
/// types"): `.volatile` is `.relaxed.sys`; `.relaxed`/`.acquire`/`.release` carry a scope;
/// anything else (no qualifier, `.weak`) is weak. `.cluster` is a block's scope here, since
/// ptxsim launches clusters of one block.
fn memory_strength(mods: &Mods) -> Strength {
    let strong = ["relaxed", "acquire", "release"]
        .iter()
        .any(|m| mods.present(m));
    if mods.present("volatile") || (strong && (mods.present("gpu") || mods.present("sys"))) {
        Strength::Gpu
    } else if strong {
        Strength::Cta
    } else {
        Strength::Weak
    }
}

/// What an mma form (already known to be one ptxsim runs) needs of the module's header.
fn mma_features(shape: MmaShape, atype: Ty, ctype: Ty) -> Vec<Feature> {
    let fp8 = matches!(atype, Ty::E4m3 | Ty::E5m2);
    let mut out = Vec::new();
    match (shape, atype) {
        (MmaShape::M8n8k4, _) => out.push(Feature::MmaM8n8k4F64),
        (MmaShape::M16n8k4, Ty::F64) => out.push(Feature::MmaM16n8k4F64),
        (MmaShape::M16n8k8 | MmaShape::M16n8k16, Ty::F64) => out.push(Feature::MmaM16n8kF64),
        (MmaShape::M16n8k4 | MmaShape::M16n8k8, Ty::Tf32) => out.push(Feature::MmaTf32),
        (MmaShape::M16n8k8 | MmaShape::M16n8k16, Ty::Bf16) => out.push(Feature::MmaBf16),
        (MmaShape::M16n8k8, _) => out.push(Feature::MmaM16n8k8F16),
        (MmaShape::M16n8k16, _) if fp8 => out.push(Feature::MmaFp8M16n8k16),
        (MmaShape::M16n8k16, _) => out.push(Feature::MmaM16n8k16),
        (MmaShape::M16n8k32, _) if fp8 => out.push(Feature::MmaFp8),
        (MmaShape::M16n8k32, _) => out.push(Feature::MmaM16n8k32Int),
        (MmaShape::M16n8k4, _) => unreachable!("mma.m16n8k4 is .tf32 or .f64"),
    }
    if fp8 && ctype == Ty::F16 {
        out.push(Feature::MmaFp8F16Acc);
    }
    out
}

fn half_kind(ty: Ty) -> (HalfFmt, bool) {
    match ty {
        Ty::F16 => (HalfFmt::F16, false),
        Ty::F16x2 => (HalfFmt::F16, true),
        Ty::Bf16 => (HalfFmt::Bf16, false),
        _ => (HalfFmt::Bf16, true),
    }
}

fn wide_of(ty: Ty) -> Ty {
    match ty {
        Ty::U16 => Ty::U32,
        Ty::S16 => Ty::S32,
        Ty::U32 => Ty::U64,
        Ty::S32 => Ty::S64,
        other => other,
    }
}
