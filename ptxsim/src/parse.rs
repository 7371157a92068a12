//! PTX text to a syntax tree: tokens, module directives, entry signatures, declarations,
//! labels and instructions with their operands, each tagged with its source line.
//!
//! This layer knows PTX's *shape* only; what an opcode and its modifiers mean is decided once,
//! in `decode`, which also rejects whatever ptxsim does not implement. Directives that carry
//! no meaning for execution (`.loc`, `.file`, `.pragma "nounroll"`) are accepted here;
//! every other unknown directive is an error naming it and its line.

use crate::error::Error;
use crate::types::{Space, Ty};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Punct(char),
    Str(String),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: u32,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

fn lex(src: &str) -> Result<Vec<Token>, Error> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= chars.len() {
                    return Err(Error::parse(start, "unterminated /* comment"));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    i += 2;
                    break;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\n' {
                    return Err(Error::parse(line, "unterminated string"));
                }
                s.push(chars[i]);
                i += 1;
            }
            i += 1;
            tokens.push(Token {
                tok: Tok::Str(s),
                line,
            });
        } else if is_word_char(c) {
            let mut s = String::new();
            while i < chars.len() {
                let ch = chars[i];
                if is_word_char(ch) {
                    s.push(ch);
                    i += 1;
                } else if ch == ':' && chars.get(i + 1) == Some(&':') {
                    // `.shared::cta`, `.L2::evict_last`: `::` belongs to the word.
                    s.push_str("::");
                    i += 2;
                } else if (ch == '+' || ch == '-')
                    && is_decimal_float_prefix(&s)
                    && (s.ends_with('e') || s.ends_with('E'))
                {
                    s.push(ch);
                    i += 1;
                } else {
                    break;
                }
            }
            tokens.push(Token {
                tok: Tok::Word(s),
                line,
            });
        } else if "{}[](),;:@!<>+-|=".contains(c) {
            tokens.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        } else {
            return Err(Error::parse(line, format!("unexpected character `{c}`")));
        }
    }
    Ok(tokens)
}

fn is_decimal_float_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_digit()
        && !(s.len() > 1 && b[0] == b'0' && matches!(b[1], b'x' | b'X' | b'f' | b'F' | b'd' | b'D'))
}

/// A literal as written; its meaning depends on the instruction type that uses it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    /// An integer literal; negative values were written with a leading `-`.
    Int(i128),
    /// `0fXXXXXXXX`: the exact bits of an f32.
    F32Bits(u32),
    /// `0dXXXXXXXXXXXXXXXX`: the exact bits of an f64.
    F64Bits(u64),
    /// A decimal floating-point literal such as `1.5`.
    Float(f64),
}

/// One operand of an instruction, before names are resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    /// A register or special register (`%r1`, `%tid.x`, `%p`), or a bare name (label,
    /// variable, parameter): which one is decided when decoding.
    Name(String),
    /// `!%p` in operand position.
    NotName(String),
    Imm(Lit),
    /// `[base+offset]`, `[name]`, `[imm]`.
    Addr {
        base: Option<String>,
        offset: i64,
    },
    /// `{a, b, ...}`.
    Vector(Vec<Operand>),
    /// `%p|%q`: the two predicate destinations of `setp`.
    PredPair(String, String),
    /// `_`: a sink.
    Sink,
    /// `[base+offset, {c0, c1, ...}]`: a tensor-map address with coordinates
    /// (`cp.async.bulk.tensor`; also the shape of texture operands, refused by name).
    Tensor {
        base: Option<String>,
        offset: i64,
        rest: Vec<Operand>,
    },
}

#[derive(Debug, Clone)]
pub struct Instruction {
    pub line: u32,
    /// `@%p` / `@!%p`: (predicate name, negated).
    pub guard: Option<(String, bool)>,
    /// Full opcode with modifiers, e.g. `ld.global.v4.f32`.
    pub opcode: String,
    pub operands: Vec<Operand>,
}

impl Instruction {
    /// The instruction as one line of text, for error messages.
    pub fn text(&self) -> String {
        let mut s = String::new();
        if let Some((p, neg)) = &self.guard {
            s.push('@');
            if *neg {
                s.push('!');
            }
            s.push_str(p);
            s.push(' ');
        }
        s.push_str(&self.opcode);
        let ops: Vec<String> = self.operands.iter().map(operand_text).collect();
        if !ops.is_empty() {
            s.push(' ');
            s.push_str(&ops.join(", "));
        }
        s
    }
}

fn operand_text(op: &Operand) -> String {
    match op {
        Operand::Name(n) => n.clone(),
        Operand::NotName(n) => format!("!{n}"),
        Operand::Imm(Lit::Int(v)) => v.to_string(),
        Operand::Imm(Lit::F32Bits(b)) => format!("0f{b:08X}"),
        Operand::Imm(Lit::F64Bits(b)) => format!("0d{b:016X}"),
        Operand::Imm(Lit::Float(v)) => v.to_string(),
        Operand::Addr { base, offset } => match (base, offset) {
            (Some(b), 0) => format!("[{b}]"),
            (Some(b), o) => format!("[{b}+{o}]"),
            (None, o) => format!("[{o}]"),
        },
        Operand::Vector(v) => format!(
            "{{{}}}",
            v.iter().map(operand_text).collect::<Vec<_>>().join(", ")
        ),
        Operand::PredPair(a, b) => format!("{a}|{b}"),
        Operand::Sink => "_".to_string(),
        Operand::Tensor { base, offset, rest } => format!(
            "[{}{}, {}]",
            base.as_deref().unwrap_or(""),
            if *offset != 0 {
                format!("+{offset}")
            } else {
                String::new()
            },
            rest.iter().map(operand_text).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// A `.shared`, `.local` (or other) variable declaration.
#[derive(Debug, Clone)]
pub struct VarDecl {
    pub line: u32,
    pub space: Space,
    pub align: Option<u32>,
    pub ty: Ty,
    pub name: String,
    /// Array dimensions; `None` for the unsized `[]` of an `.extern .shared` array.
    pub dims: Vec<Option<u64>>,
    pub is_extern: bool,
}

impl VarDecl {
    /// Size in bytes (0 for an unsized extern array).
    pub fn size_bytes(&self) -> u64 {
        let mut n = self.ty.bytes() as u64;
        for d in &self.dims {
            n = n.saturating_mul(d.unwrap_or(0));
        }
        n
    }
}

#[derive(Debug, Clone)]
pub struct ParamDecl {
    pub name: String,
    pub ty: Ty,
    pub align: Option<u32>,
    /// Element count of an array parameter (`.param .align 8 .b8 p[16]`).
    pub array: Option<u64>,
}

#[derive(Debug, Clone)]
pub enum Statement {
    /// `.reg .ty names`: each name is (base, count) where count is `Some(n)` for `%r<n>`.
    Reg {
        line: u32,
        ty: Ty,
        names: Vec<(String, Option<u32>)>,
    },
    Var(VarDecl),
    Label {
        line: u32,
        name: String,
    },
    Inst(Instruction),
    ScopeOpen,
    ScopeClose,
}

#[derive(Debug, Clone)]
pub struct EntryAst {
    pub line: u32,
    pub name: String,
    pub params: Vec<ParamDecl>,
    pub reqntid: Option<(u32, u32, u32)>,
    pub maxntid: Option<(u32, u32, u32)>,
    /// `.reqnctapercluster`: the cluster shape every launch of the entry has.
    pub reqnctapercluster: Option<(u32, u32, u32)>,
    pub body: Vec<Statement>,
}

#[derive(Debug, Clone)]
pub struct ModuleAst {
    pub version: Option<(u32, u32)>,
    /// Lines of the `.version` and `.target` directives (0 if absent).
    pub version_line: u32,
    pub target_line: u32,
    pub targets: Vec<String>,
    pub module_vars: Vec<VarDecl>,
    pub entries: Vec<EntryAst>,
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn line(&self) -> u32 {
        self.toks
            .get(self.pos)
            .or_else(|| self.toks.last())
            .map_or(0, |t| t.line)
    }

    fn next(&mut self) -> Result<Token, Error> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or_else(|| Error::parse(self.line(), "unexpected end of file"))?;
        self.pos += 1;
        Ok(t)
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), Error> {
        let line = self.line();
        match self.next()?.tok {
            Tok::Punct(p) if p == c => Ok(()),
            other => Err(Error::parse(
                line,
                format!("expected `{c}`, found {}", describe(&other)),
            )),
        }
    }

    fn word(&mut self) -> Result<(String, u32), Error> {
        let line = self.line();
        match self.next()?.tok {
            Tok::Word(w) => Ok((w, line)),
            other => Err(Error::parse(
                line,
                format!("expected a name, found {}", describe(&other)),
            )),
        }
    }

    fn peek_word(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    fn number(&mut self) -> Result<u64, Error> {
        let (w, line) = self.word()?;
        parse_uint(&w).ok_or_else(|| Error::parse(line, format!("expected a number, found `{w}`")))
    }

    /// Skips the rest of a line-oriented directive (`.loc`, `.file`) that has no `;`.
    fn skip_line(&mut self, line: u32) {
        while self.pos < self.toks.len() && self.toks[self.pos].line == line {
            if self.toks[self.pos].tok == Tok::Punct(';') {
                self.pos += 1;
                break;
            }
            self.pos += 1;
        }
    }
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Word(w) => format!("`{w}`"),
        Tok::Punct(c) => format!("`{c}`"),
        Tok::Str(s) => format!("\"{s}\""),
    }
}

pub(crate) fn parse_uint(w: &str) -> Option<u64> {
    let w = w.strip_suffix('U').unwrap_or(w);
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = w.strip_prefix("0b").or_else(|| w.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if w.len() > 1 && w.starts_with('0') && w.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&w[1..], 8).ok()
    } else {
        w.parse().ok()
    }
}

fn parse_lit(w: &str) -> Option<Lit> {
    let b = w.as_bytes();
    if b.len() == 10 && (w.starts_with("0f") || w.starts_with("0F")) {
        return u32::from_str_radix(&w[2..], 16).ok().map(Lit::F32Bits);
    }
    if b.len() == 18 && (w.starts_with("0d") || w.starts_with("0D")) {
        return u64::from_str_radix(&w[2..], 16).ok().map(Lit::F64Bits);
    }
    if let Some(v) = parse_uint(w) {
        return Some(Lit::Int(v as i128));
    }
    if is_decimal_float_prefix(w) && (w.contains('.') || w.contains('e') || w.contains('E')) {
        return w.parse::<f64>().ok().map(Lit::Float);
    }
    None
}

fn parse_type_word(w: &str, line: u32) -> Result<Ty, Error> {
    w.strip_prefix('.')
        .and_then(Ty::from_name)
        .ok_or_else(|| Error::unsupported(line, format!("type `{w}`")))
}

/// Parses a whole PTX module.
pub fn parse_module(src: &str) -> Result<ModuleAst, Error> {
    let mut p = Parser {
        toks: lex(src)?,
        pos: 0,
    };
    let mut module = ModuleAst {
        version: None,
        version_line: 0,
        target_line: 0,
        targets: Vec::new(),
        module_vars: Vec::new(),
        entries: Vec::new(),
    };
    while p.peek().is_some() {
        let (w, line) = p.word()?;
        match w.as_str() {
            ".version" => {
                let (v, vline) = p.word()?;
                let (maj, min) = v
                    .split_once('.')
                    .ok_or_else(|| Error::parse(vline, format!("bad .version `{v}`")))?;
                let parse = |s: &str| {
                    s.parse::<u32>()
                        .map_err(|_| Error::parse(vline, format!("bad .version `{v}`")))
                };
                module.version = Some((parse(maj)?, parse(min)?));
                module.version_line = line;
            }
            ".target" => loop {
                module.target_line = line;
                let (t, _) = p.word()?;
                module.targets.push(t);
                if !p.eat_punct(',') {
                    break;
                }
            },
            ".address_size" => {
                let n = p.number()?;
                if n != 64 {
                    return Err(Error::unsupported(line, format!(".address_size {n}")));
                }
            }
            ".file" | ".loc" => p.skip_line(line),
            ".visible" | ".weak" | ".extern" | ".entry" | ".func" | ".shared" | ".global"
            | ".const" => {
                let mut is_extern = false;
                let mut kw = w.clone();
                loop {
                    match kw.as_str() {
                        ".visible" | ".weak" => kw = p.word()?.0,
                        ".extern" => {
                            is_extern = true;
                            kw = p.word()?.0;
                        }
                        _ => break,
                    }
                }
                match kw.as_str() {
                    ".entry" => module.entries.push(parse_entry(&mut p, line)?),
                    ".func" => {
                        return Err(Error::unsupported(
                            line,
                            "`.func` (device functions and `call`)",
                        ))
                    }
                    ".shared" => {
                        let var = parse_var_rest(&mut p, Space::Shared, is_extern, line)?;
                        module.module_vars.push(var);
                    }
                    ".global" | ".const" => {
                        return Err(Error::unsupported(
                            line,
                            format!("module-scope `{kw}` variables"),
                        ))
                    }
                    other => return Err(Error::unsupported(line, format!("directive `{other}`"))),
                }
            }
            ".pragma" => {
                parse_pragma(&mut p, line)?;
            }
            other => {
                return Err(if other.starts_with('.') {
                    Error::unsupported(line, format!("directive `{other}`"))
                } else {
                    Error::parse(line, format!("unexpected `{other}` at module scope"))
                })
            }
        }
    }
    Ok(module)
}

fn parse_pragma(p: &mut Parser, line: u32) -> Result<(), Error> {
    let t = p.next()?;
    match t.tok {
        // Loop-unrolling advice for ptxas: no effect on what the code computes.
        Tok::Str(s) if s == "nounroll" => {}
        Tok::Str(s) => return Err(Error::unsupported(line, format!(".pragma \"{s}\""))),
        other => {
            return Err(Error::parse(
                line,
                format!(
                    "expected a string after .pragma, found {}",
                    describe(&other)
                ),
            ))
        }
    }
    p.expect_punct(';')
}

fn parse_dim3(p: &mut Parser) -> Result<(u32, u32, u32), Error> {
    let mut dims = [1u32; 3];
    for (i, d) in dims.iter_mut().enumerate() {
        if i > 0 && !p.eat_punct(',') {
            break;
        }
        *d = p.number()? as u32;
    }
    Ok((dims[0], dims[1], dims[2]))
}

fn parse_entry(p: &mut Parser, line: u32) -> Result<EntryAst, Error> {
    let (name, _) = p.word()?;
    let mut entry = EntryAst {
        line,
        name,
        params: Vec::new(),
        reqntid: None,
        maxntid: None,
        reqnctapercluster: None,
        body: Vec::new(),
    };
    if p.eat_punct('(') && !p.eat_punct(')') {
        loop {
            entry.params.push(parse_param(p)?);
            if p.eat_punct(')') {
                break;
            }
            p.expect_punct(',')?;
        }
    }
    // Performance directives between the signature and the body.
    while let Some(w) = p.peek_word().map(str::to_string) {
        let dline = p.line();
        p.pos += 1;
        match w.as_str() {
            ".reqntid" => entry.reqntid = Some(parse_dim3(p)?),
            ".maxntid" => entry.maxntid = Some(parse_dim3(p)?),
            ".reqnctapercluster" => entry.reqnctapercluster = Some(parse_dim3(p)?),
            // Only with `.reqnctapercluster` here: launched as a cluster.
            ".explicitcluster" => {}
            // Occupancy and register-allocation hints: no effect on results.
            ".minnctapersm" | ".maxnreg" | ".maxnctapersm" => {
                p.number()?;
            }
            other => {
                return Err(Error::unsupported(
                    dline,
                    format!("entry directive `{other}`"),
                ))
            }
        }
    }
    p.expect_punct('{')?;
    let mut depth = 1;
    while depth > 0 {
        if p.peek().is_none() {
            return Err(Error::parse(
                line,
                format!("entry `{}` is not closed", entry.name),
            ));
        }
        if p.eat_punct('{') {
            depth += 1;
            entry.body.push(Statement::ScopeOpen);
            continue;
        }
        if p.eat_punct('}') {
            depth -= 1;
            if depth > 0 {
                entry.body.push(Statement::ScopeClose);
            }
            continue;
        }
        if let Some(st) = parse_statement(p)? {
            entry.body.push(st);
        }
    }
    Ok(entry)
}

fn parse_param(p: &mut Parser) -> Result<ParamDecl, Error> {
    let (w, line) = p.word()?;
    if w != ".param" {
        return Err(Error::unsupported(
            line,
            format!("entry parameter declared with `{w}` (only `.param`)"),
        ));
    }
    let mut align = None;
    let mut ty = None;
    loop {
        let (w, wline) = p.word()?;
        match w.as_str() {
            ".align" => align = Some(p.number()? as u32),
            // Pointer attributes only inform the optimiser.
            ".ptr" | ".global" | ".shared" | ".local" | ".const" => {}
            _ if w.starts_with('.') => ty = Some(parse_type_word(&w, wline)?),
            _ => {
                let ty = ty.ok_or_else(|| Error::parse(wline, "parameter without a type"))?;
                let mut array = None;
                if p.eat_punct('[') {
                    array = Some(p.number()?);
                    p.expect_punct(']')?;
                }
                return Ok(ParamDecl {
                    name: w,
                    ty,
                    align,
                    array,
                });
            }
        }
    }
}

/// After the state-space keyword: `[.align N] .type name[dims] ;`.
fn parse_var_rest(
    p: &mut Parser,
    space: Space,
    is_extern: bool,
    line: u32,
) -> Result<VarDecl, Error> {
    let mut align = None;
    let mut ty = None;
    loop {
        let (w, wline) = p.word()?;
        if w == ".align" {
            align = Some(p.number()? as u32);
        } else if w.starts_with(".v") && w.len() <= 3 {
            return Err(Error::unsupported(
                wline,
                format!("vector variable type `{w}`"),
            ));
        } else if w.starts_with('.') {
            ty = Some(parse_type_word(&w, wline)?);
        } else {
            let ty = ty.ok_or_else(|| Error::parse(wline, "variable without a type"))?;
            let mut dims = Vec::new();
            while p.eat_punct('[') {
                if p.eat_punct(']') {
                    dims.push(None);
                } else {
                    dims.push(Some(p.number()?));
                    p.expect_punct(']')?;
                }
            }
            if p.is_punct('=') {
                return Err(Error::unsupported(wline, "variable initializers"));
            }
            p.expect_punct(';')?;
            return Ok(VarDecl {
                line,
                space,
                align,
                ty,
                name: w,
                dims,
                is_extern,
            });
        }
    }
}

fn parse_statement(p: &mut Parser) -> Result<Option<Statement>, Error> {
    let line = p.line();
    if p.eat_punct('@') {
        let neg = p.eat_punct('!');
        let (pred, _) = p.word()?;
        let mut inst = parse_instruction(p)?;
        inst.guard = Some((pred, neg));
        inst.line = line;
        return Ok(Some(Statement::Inst(inst)));
    }
    let w = match p.peek() {
        Some(Tok::Word(w)) => w.clone(),
        Some(other) => {
            return Err(Error::parse(
                line,
                format!("unexpected {}", describe(other)),
            ))
        }
        None => return Err(Error::parse(line, "unexpected end of file")),
    };
    // Label?
    if p.toks.get(p.pos + 1).map(|t| &t.tok) == Some(&Tok::Punct(':')) && !w.starts_with('.') {
        p.pos += 2;
        return Ok(Some(Statement::Label { line, name: w }));
    }
    if w.starts_with('.') {
        p.pos += 1;
        return match w.as_str() {
            ".reg" => parse_reg(p, line).map(Some),
            ".shared" => {
                parse_var_rest(p, Space::Shared, false, line).map(|v| Some(Statement::Var(v)))
            }
            ".local" => {
                parse_var_rest(p, Space::Local, false, line).map(|v| Some(Statement::Var(v)))
            }
            ".extern" => {
                let (sp, sline) = p.word()?;
                if sp != ".shared" {
                    return Err(Error::unsupported(sline, format!(".extern {sp}")));
                }
                parse_var_rest(p, Space::Shared, true, line).map(|v| Some(Statement::Var(v)))
            }
            ".loc" | ".file" => {
                p.skip_line(line);
                Ok(None)
            }
            ".pragma" => {
                parse_pragma(p, line)?;
                Ok(None)
            }
            other => Err(Error::unsupported(
                line,
                format!("directive `{other}` in an entry body"),
            )),
        };
    }
    parse_instruction(p).map(|i| Some(Statement::Inst(i)))
}

fn parse_reg(p: &mut Parser, line: u32) -> Result<Statement, Error> {
    let (tw, tline) = p.word()?;
    if tw.starts_with(".v") && Ty::from_name(&tw[1..]).is_none() {
        return Err(Error::unsupported(
            tline,
            format!("vector registers `.reg {tw}`"),
        ));
    }
    let ty = parse_type_word(&tw, tline)?;
    let mut names = Vec::new();
    loop {
        let (name, _) = p.word()?;
        let count = if p.eat_punct('<') {
            let n = p.number()? as u32;
            p.expect_punct('>')?;
            Some(n)
        } else {
            None
        };
        names.push((name, count));
        if p.eat_punct(';') {
            break;
        }
        p.expect_punct(',')?;
    }
    Ok(Statement::Reg { line, ty, names })
}

fn parse_instruction(p: &mut Parser) -> Result<Instruction, Error> {
    let (opcode, line) = p.word()?;
    let mut operands = Vec::new();
    if !p.eat_punct(';') {
        loop {
            operands.push(parse_operand(p)?);
            if p.eat_punct(';') {
                break;
            }
            let l = p.line();
            if !p.eat_punct(',') {
                let found = p.peek().map_or("end of file".to_string(), describe);
                return Err(Error::parse(
                    l,
                    format!("in `{opcode}`: expected `,` or `;`, found {found}"),
                ));
            }
        }
    }
    Ok(Instruction {
        line,
        guard: None,
        opcode,
        operands,
    })
}

fn parse_operand(p: &mut Parser) -> Result<Operand, Error> {
    if p.eat_punct('{') {
        let mut elems = Vec::new();
        loop {
            elems.push(parse_operand(p)?);
            if p.eat_punct('}') {
                break;
            }
            p.expect_punct(',')?;
        }
        return Ok(Operand::Vector(elems));
    }
    if p.eat_punct('[') {
        let mut base = None;
        let mut offset: i64 = 0;
        let mut first = true;
        loop {
            // `+8`, `-8` and `+-8` (what compilers emit) are all offsets.
            p.eat_punct('+');
            let negative = p.eat_punct('-');
            let (w, wline) = p.word()?;
            if let Some(v) = parse_uint(&w) {
                let v = v as i64;
                offset = offset.wrapping_add(if negative { -v } else { v });
            } else if first && !negative {
                base = Some(w);
            } else {
                return Err(Error::parse(wline, format!("bad address term `{w}`")));
            }
            first = false;
            if p.eat_punct(']') {
                break;
            }
            if p.eat_punct(',') {
                // `[tmap, {x, y}]`: a tensor-map address and its coordinates.
                let mut rest = vec![parse_operand(p)?];
                while p.eat_punct(',') {
                    rest.push(parse_operand(p)?);
                }
                p.expect_punct(']')?;
                return Ok(Operand::Tensor { base, offset, rest });
            }
            if !p.is_punct('+') && !p.is_punct('-') {
                return Err(Error::parse(
                    wline,
                    "expected `+`, `-` or `]` in an address",
                ));
            }
        }
        return Ok(Operand::Addr { base, offset });
    }
    if p.eat_punct('!') {
        let (w, _) = p.word()?;
        return Ok(Operand::NotName(w));
    }
    if p.eat_punct('-') {
        let (w, wline) = p.word()?;
        return match parse_lit(&w) {
            Some(Lit::Int(v)) => Ok(Operand::Imm(Lit::Int(-v))),
            Some(Lit::Float(v)) => Ok(Operand::Imm(Lit::Float(-v))),
            Some(Lit::F32Bits(b)) => Ok(Operand::Imm(Lit::F32Bits(b ^ 0x8000_0000))),
            Some(Lit::F64Bits(b)) => Ok(Operand::Imm(Lit::F64Bits(b ^ (1 << 63)))),
            None => Err(Error::parse(wline, format!("bad negative literal `-{w}`"))),
        };
    }
    let (w, wline) = p.word()?;
    if w == "_" {
        return Ok(Operand::Sink);
    }
    if w.as_bytes()[0].is_ascii_digit() {
        return parse_lit(&w)
            .map(Operand::Imm)
            .ok_or_else(|| Error::parse(wline, format!("bad literal `{w}`")));
    }
    if p.eat_punct('|') {
        let (q, _) = p.word()?;
        return Ok(Operand::PredPair(w, q));
    }
    Ok(Operand::Name(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_modifiers_with_double_colons_and_labels() {
        let m = parse_module(
            ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 a)\n{\n .reg .b64 %rd<3>;\nL1:\n ld.global.L2::evict_last.u64 %rd1, [%rd2+-8];\n @!%p bra L1;\n}\n",
        )
        .unwrap();
        let e = &m.entries[0];
        assert_eq!(e.name, "k");
        assert_eq!(e.params[0].name, "a");
        let insts: Vec<_> = e
            .body
            .iter()
            .filter_map(|s| match s {
                Statement::Inst(i) => Some(i.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(insts[0].opcode, "ld.global.L2::evict_last.u64");
        assert_eq!(
            insts[0].operands[1],
            Operand::Addr {
                base: Some("%rd2".into()),
                offset: -8
            }
        );
        assert_eq!(insts[0].line, 8);
        assert_eq!(insts[1].guard, Some(("%p".to_string(), true)));
        assert_eq!(insts[1].line, 9);
    }

    #[test]
    fn literals() {
        assert_eq!(parse_lit("0f3F800000"), Some(Lit::F32Bits(0x3F80_0000)));
        assert_eq!(
            parse_lit("0d3FF0000000000000"),
            Some(Lit::F64Bits(0x3FF0_0000_0000_0000))
        );
        assert_eq!(parse_lit("0xff"), Some(Lit::Int(255)));
        assert_eq!(parse_lit("17"), Some(Lit::Int(17)));
        assert_eq!(parse_lit("1.5"), Some(Lit::Float(1.5)));
        assert_eq!(parse_lit("1.5e-3"), Some(Lit::Float(1.5e-3)));
    }

    #[test]
    fn unknown_directive_names_itself_and_its_line() {
        let err = parse_module(".version 7.0\n.target sm_80\n.address_size 64\n.surfref s;\n")
            .unwrap_err();
        assert_eq!(err.line(), Some(4));
        assert!(err.to_string().contains(".surfref"), "{err}");
    }
}
