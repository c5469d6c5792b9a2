//! Target descriptions (`target.xml` and the files it includes) as a register layout.
//!
//! A small hand parser: it reads `<architecture>`, `<feature name=…>`, `<reg …/>` and
//! `<xi:include href=…/>` in document order and ignores everything else (types, comments,
//! the DOCTYPE). Register numbers follow GDB's rule: a `<reg>` without `regnum` takes the
//! previous register's number plus one.

use crate::error::{GdbError, Result};

/// Most files followed through `xi:include`.
const MAX_INCLUDES: usize = 64;
/// Deepest include nesting.
const MAX_DEPTH: usize = 8;
/// Most registers accepted.
const MAX_REGISTERS: usize = 4096;

/// One register of the target description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegisterInfo {
    /// Its name (`rip`, `eflags`, `xmm0`…).
    pub name: String,
    /// Its size in bits.
    pub bitsize: u32,
    /// The number used by `p`/`P` and in stop replies.
    pub regnum: u32,
    /// The `group` attribute (`general`, `float`, `vector`…) when given.
    pub group: Option<String>,
    /// The `type` attribute (`int64`, `code_ptr`, `i387_ext`…) when given.
    pub type_name: Option<String>,
    /// The `<feature name=…>` it belongs to.
    pub feature: String,
    /// Byte offset of the register in the `g` reply (registers in regnum order).
    pub offset: usize,
}

/// The registers of a target, in regnum order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisterLayout {
    /// `<architecture>`, e.g. `i386:x86-64`.
    pub architecture: Option<String>,
    /// The registers, sorted by `regnum`.
    pub registers: Vec<RegisterInfo>,
}

impl RegisterLayout {
    /// GDB's x86-64 core and SSE registers (`64bit-core.xml`, `64bit-sse.xml`) in `g` order:
    /// what a stub means when it names `i386:x86-64` without listing registers.
    pub fn amd64_core() -> RegisterLayout {
        const GPR: [&str; 17] = [
            "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
            "r12", "r13", "r14", "r15", "rip",
        ];
        const SEG: [&str; 7] = ["eflags", "cs", "ss", "ds", "es", "fs", "gs"];
        const FPC: [&str; 8] = [
            "fctrl", "fstat", "ftag", "fiseg", "fioff", "foseg", "fooff", "fop",
        ];
        let mut regs: Vec<(String, u32, &str, &str)> = Vec::new();
        let core = "org.gnu.gdb.i386.core";
        for r in GPR {
            regs.push((r.to_string(), 64, "general", core));
        }
        for r in SEG {
            regs.push((r.to_string(), 32, "general", core));
        }
        for i in 0..8 {
            regs.push((format!("st{i}"), 80, "float", core));
        }
        for r in FPC {
            regs.push((r.to_string(), 32, "float", core));
        }
        for i in 0..16 {
            regs.push((format!("xmm{i}"), 128, "vector", "org.gnu.gdb.i386.sse"));
        }
        regs.push(("mxcsr".to_string(), 32, "vector", "org.gnu.gdb.i386.sse"));
        let mut offset = 0;
        let registers = regs
            .into_iter()
            .enumerate()
            .map(|(i, (name, bitsize, group, feature))| {
                let r = RegisterInfo {
                    name,
                    bitsize,
                    regnum: i as u32,
                    group: Some(group.to_string()),
                    type_name: None,
                    feature: feature.to_string(),
                    offset,
                };
                offset += (bitsize as usize).div_ceil(8);
                r
            })
            .collect();
        RegisterLayout {
            architecture: Some("i386:x86-64".to_string()),
            registers,
        }
    }

    /// The register with this name (case-insensitive).
    pub fn by_name(&self, name: &str) -> Option<&RegisterInfo> {
        self.registers
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }

    /// The register with this number.
    pub fn by_regnum(&self, regnum: u32) -> Option<&RegisterInfo> {
        self.registers.iter().find(|r| r.regnum == regnum)
    }

    /// The bytes of `name` (target byte order) from a `g` reply, `None` when the reply is too
    /// short or any byte is unavailable.
    pub fn value(&self, name: &str, g: &[Option<u8>]) -> Option<Vec<u8>> {
        let reg = self.by_name(name)?;
        let len = (reg.bitsize as usize).div_ceil(8);
        g.get(reg.offset..reg.offset.checked_add(len)?)?
            .iter()
            .copied()
            .collect()
    }

    /// The value of `name` as a little-endian integer (registers of at most 64 bits).
    pub fn value_u64(&self, name: &str, g: &[Option<u8>]) -> Option<u64> {
        let bytes = self.value(name, g)?;
        if bytes.len() > 8 {
            return None;
        }
        let mut buf = [0u8; 8];
        buf[..bytes.len()].copy_from_slice(&bytes);
        Some(u64::from_le_bytes(buf))
    }
}

/// Parses `xml` (the text of `target.xml`), fetching included files with `fetch(href)`.
pub fn parse_features(
    xml: &str,
    fetch: &mut dyn FnMut(&str) -> Result<String>,
) -> Result<RegisterLayout> {
    let mut st = ParseState {
        layout: RegisterLayout::default(),
        next_regnum: 0,
        includes: 0,
        feature: String::new(),
    };
    parse_doc(xml, fetch, &mut st, 0)?;
    let mut layout = st.layout;
    layout.registers.sort_by_key(|r| r.regnum);
    layout.registers.dedup_by_key(|r| r.regnum);
    let mut offset = 0usize;
    for r in &mut layout.registers {
        r.offset = offset;
        offset = offset.saturating_add((r.bitsize as usize).div_ceil(8));
    }
    Ok(layout)
}

struct ParseState {
    layout: RegisterLayout,
    next_regnum: u32,
    includes: usize,
    feature: String,
}

fn parse_doc(
    xml: &str,
    fetch: &mut dyn FnMut(&str) -> Result<String>,
    st: &mut ParseState,
    depth: usize,
) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(GdbError::TargetXml("includes nested too deeply".into()));
    }
    let mut rest = xml;
    while let Some(lt) = rest.find('<') {
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |i| &after[i + 3..]);
            continue;
        }
        let Some(gt) = rest.find('>') else { break };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') || tag.starts_with('/') {
            continue;
        }
        let tag = tag.strip_suffix('/').unwrap_or(tag);
        let name_end = tag
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(tag.len());
        let (name, attrs) = tag.split_at(name_end);
        match name {
            "architecture" => {
                let end = rest.find('<').unwrap_or(rest.len());
                let text = unentity(rest[..end].trim());
                if !text.is_empty() {
                    st.layout.architecture = Some(text);
                }
            }
            "feature" => {
                st.feature = attr(attrs, "name").unwrap_or_default();
            }
            "reg" => {
                if st.layout.registers.len() >= MAX_REGISTERS {
                    return Err(GdbError::TargetXml("too many registers".into()));
                }
                let rname = attr(attrs, "name")
                    .ok_or_else(|| GdbError::TargetXml("<reg> without a name".into()))?;
                let bitsize = attr(attrs, "bitsize")
                    .and_then(|b| b.parse::<u32>().ok())
                    .filter(|b| (1..=4096).contains(b))
                    .ok_or_else(|| GdbError::TargetXml(format!("register {rname}: bad bitsize")))?;
                let regnum = match attr(attrs, "regnum") {
                    Some(n) => n.parse::<u32>().map_err(|_| {
                        GdbError::TargetXml(format!("register {rname}: bad regnum"))
                    })?,
                    None => st.next_regnum,
                };
                st.next_regnum = regnum.saturating_add(1);
                st.layout.registers.push(RegisterInfo {
                    name: rname,
                    bitsize,
                    regnum,
                    group: attr(attrs, "group"),
                    type_name: attr(attrs, "type"),
                    feature: st.feature.clone(),
                    offset: 0,
                });
            }
            "xi:include" | "include" => {
                let href = attr(attrs, "href")
                    .ok_or_else(|| GdbError::TargetXml("xi:include without href".into()))?;
                st.includes += 1;
                if st.includes > MAX_INCLUDES {
                    return Err(GdbError::TargetXml("too many included files".into()));
                }
                let text = fetch(&href)?;
                let saved = std::mem::take(&mut st.feature);
                parse_doc(&text, fetch, st, depth + 1)?;
                st.feature = saved;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The value of attribute `key` in `attrs` (`key="v"` or `key='v'`).
fn attr(attrs: &str, key: &str) -> Option<String> {
    let mut rest = attrs;
    loop {
        rest = rest.trim_start();
        let eq = rest.find('=')?;
        let k = rest[..eq].trim();
        let after = rest[eq + 1..].trim_start();
        let quote = after.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let body = &after[1..];
        let end = body.find(quote)?;
        if k == key {
            return Some(unentity(&body[..end]));
        }
        rest = &body[end + 1..];
    }
}

fn unentity(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: &str = r#"<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target>
  <architecture>i386:x86-64</architecture>
  <osabi>GNU/Linux</osabi>
  <!-- a comment with <reg name="fake" bitsize="8"/> inside -->
  <xi:include href="64bit-core.xml"/>
  <feature name="org.gnu.gdb.i386.linux">
    <reg name="orig_rax" bitsize="64" type="int" regnum="57"/>
  </feature>
</target>"#;

    const CORE: &str = r#"<feature name='org.gnu.gdb.i386.core'>
  <reg name="rax" bitsize="64" type="int64"/>
  <reg name="rbx" bitsize="64" type="int64"/>
  <reg name="rip" bitsize="64" type="code_ptr" regnum="16" group="general"/>
  <reg name="eflags" bitsize="32" type="i386_eflags"/>
</feature>"#;

    #[test]
    fn parses_includes_and_regnums() {
        let layout = parse_features(TOP, &mut |href| {
            assert_eq!(href, "64bit-core.xml");
            Ok(CORE.to_string())
        })
        .unwrap();
        assert_eq!(layout.architecture.as_deref(), Some("i386:x86-64"));
        let names: Vec<_> = layout
            .registers
            .iter()
            .map(|r| (r.name.as_str(), r.regnum))
            .collect();
        assert_eq!(
            names,
            [
                ("rax", 0),
                ("rbx", 1),
                ("rip", 16),
                ("eflags", 17),
                ("orig_rax", 57)
            ]
        );
        let rip = layout.by_name("RIP").unwrap();
        assert_eq!(rip.offset, 16);
        assert_eq!(rip.group.as_deref(), Some("general"));
        assert_eq!(rip.feature, "org.gnu.gdb.i386.core");
        assert_eq!(
            layout.by_name("orig_rax").unwrap().feature,
            "org.gnu.gdb.i386.linux"
        );
        let mut g = vec![Some(0u8); 28];
        g[16] = Some(0x10);
        g[17] = Some(0x20);
        assert_eq!(layout.value_u64("rip", &g), Some(0x2010));
        g[18] = None;
        assert_eq!(layout.value_u64("rip", &g), None);
        assert_eq!(layout.value_u64("orig_rax", &g), None);
    }

    #[test]
    fn builtin_amd64_layout() {
        let l = RegisterLayout::amd64_core();
        assert_eq!(l.by_name("rip").unwrap().regnum, 16);
        assert_eq!(l.by_name("eflags").unwrap().offset, 136);
        assert_eq!(l.by_name("st0").unwrap().offset, 164);
        assert_eq!(l.by_name("xmm0").unwrap().regnum, 40);
        assert_eq!(l.by_name("mxcsr").unwrap().regnum, 56);
    }

    #[test]
    fn rejects_bad_documents() {
        let mut fetch = |_: &str| Ok(String::new());
        assert!(parse_features(r#"<reg name="a" bitsize="x"/>"#, &mut fetch).is_err());
        assert!(parse_features(r#"<reg bitsize="8"/>"#, &mut fetch).is_err());
        // Self-inclusion ends at the depth limit, not in a stack overflow.
        let looped = r#"<xi:include href="t.xml"/>"#;
        let err = parse_features(looped, &mut |_| Ok(looped.to_string())).unwrap_err();
        assert_eq!(err.code(), "target_xml");
        assert!(parse_features("<unterminated", &mut fetch).is_ok());
    }
}
