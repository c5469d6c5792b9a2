//! Tests for the MASM evaluator: the vector files, range parsing, messages, limits, and a
//! fixed-seed garbage-input loop that checks nothing panics.

use std::collections::HashMap;

use super::*;

/// A small fake debugger: a few registers, two memory regions and some symbols.
struct FakeEnv {
    registers: HashMap<&'static str, u64>,
    regions: Vec<(u64, Vec<u8>)>,
    symbols: HashMap<&'static str, u64>,
    pointer_size: usize,
}

impl FakeEnv {
    fn new() -> Self {
        let registers = HashMap::from([
            ("rax", 0x1000),
            ("eax", 0x1000),
            ("ah", 0x10),
            ("al", 0x0),
            ("rbx", 0x0),
            ("rcx", 0x20),
            ("rsp", 0x2000),
            ("rbp", 0x2040),
            ("rip", 0x1_4000_1520),
            ("$ip", 0x1_4000_1520),
            ("$csp", 0x2000),
            ("$ra", 0x1_4000_1600),
            ("$exentry", 0x1_4000_1000),
            ("$peb", 0x3000),
            ("$teb", 0x4000),
            ("$tid", 0x1a2c),
            ("$tpid", 0x99c),
        ]);
        let mut stack = vec![0u8; 0x40];
        stack[0..8].copy_from_slice(&0x1_4000_1520u64.to_le_bytes());
        stack[8..16].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        stack[16..24].copy_from_slice(&0x3000u64.to_le_bytes());
        let mut peb = vec![0u8; 0x10];
        peb[0..8].copy_from_slice(&0xcafe_f00du64.to_le_bytes());
        let symbols = HashMap::from([
            ("crashy!main", 0x1_4000_1520),
            ("main", 0x1_4000_1520),
            ("crashy", 0x1_4000_0000),
            ("crashy!ns::Widget::draw", 0x1_4000_1600),
            ("crashy!ns::Widget::~Widget", 0x1_4000_1680),
            ("crashy!std::vector<int>::size", 0x1_4000_1700),
            (
                "crashy!std::vector<std::pair<int, int> >::size",
                0x1_4000_1780,
            ),
            ("ntdll", 0x7ffb_0000_0000),
            ("ntdll!RtlUserThreadStart", 0x7ffb_0000_1000),
            ("lstrlenW", 0x7ffa_0000_2000),
        ]);
        FakeEnv {
            registers,
            regions: vec![(0x2000, stack), (0x3000, peb)],
            symbols,
            pointer_size: 8,
        }
    }
}

impl ExprEnv for FakeEnv {
    fn register(&self, name: &str) -> Option<u64> {
        self.registers.get(name).copied()
    }

    fn read_memory(&self, addr: u64, size: usize) -> Option<u64> {
        let (base, bytes) = self
            .regions
            .iter()
            .find(|(base, bytes)| addr >= *base && addr - base < bytes.len() as u64)?;
        let offset = usize::try_from(addr - base).ok()?;
        let slice = bytes.get(offset..offset.checked_add(size)?)?;
        let mut buf = [0u8; 8];
        buf.get_mut(..size)?.copy_from_slice(slice);
        Some(u64::from_le_bytes(buf))
    }

    fn pointer_size(&self) -> usize {
        self.pointer_size
    }

    fn symbol(&self, name: &str) -> Option<u64> {
        self.symbols.get(name).copied()
    }
}

/// An expected error line: `error <code> [at <start>..<end>]`.
fn check_error(line_no: usize, input: &str, err: &ExprError, spec: &str) {
    let mut words = spec.split_whitespace();
    let code = words.next().unwrap_or_default();
    assert_eq!(
        err.code(),
        code,
        "line {line_no}: `{input}`: wrong error {err:?}"
    );
    if words.next() == Some("at") {
        let span = words.next().unwrap_or_default();
        let (start, end) = span.split_once("..").expect("span as start..end");
        let span = start.parse().expect("start")..end.parse().expect("end");
        assert_eq!(err.span, span, "line {line_no}: `{input}`: wrong span");
    }
    assert!(input.is_char_boundary(err.span.start.min(input.len())));
}

/// Parses `0x…` expected values (backticks allowed).
fn expected_value(text: &str) -> u64 {
    let hex = text
        .strip_prefix("0x")
        .unwrap_or_else(|| panic!("expected value `{text}` needs 0x"))
        .replace('`', "");
    u64::from_str_radix(&hex, 16).unwrap_or_else(|e| panic!("bad expected `{text}`: {e}"))
}

/// The non-comment lines of a vector file, split at the last `=>`, with 1-based line numbers.
fn vector_lines(text: &str) -> Vec<(usize, &str, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .map(|(i, line)| {
            let (input, expected) = line
                .rsplit_once("=>")
                .unwrap_or_else(|| panic!("line {}: no `=>`", i + 1));
            (i + 1, input.trim(), expected.trim())
        })
        .collect()
}

#[test]
fn expression_vectors() {
    let env = FakeEnv::new();
    let cases = vector_lines(include_str!("vectors.txt"));
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    for (line_no, input, expected) in cases {
        let result = evaluate(input, &env);
        match expected.strip_prefix("error ") {
            Some(spec) => match result {
                Ok(v) => panic!("line {line_no}: `{input}` gave {v:#x}, expected error {spec}"),
                Err(err) => check_error(line_no, input, &err, spec),
            },
            None => match result {
                Ok(v) => assert_eq!(v, expected_value(expected), "line {line_no}: `{input}`"),
                Err(err) => panic!("line {line_no}: `{input}` failed: {err}"),
            },
        }
    }
}

#[test]
fn range_vectors() {
    let env = FakeEnv::new();
    let cases = vector_lines(include_str!("ranges.txt"));
    assert!(cases.len() >= 25);
    for (line_no, input, expected) in cases {
        let result = parse_range(input, &env);
        if let Some(spec) = expected.strip_prefix("error ") {
            match result {
                Ok(r) => panic!("line {line_no}: `{input}` gave {r:?}, expected error"),
                Err(err) => check_error(line_no, input, &err, spec),
            }
            continue;
        }
        let range = result.unwrap_or_else(|e| panic!("line {line_no}: `{input}`: {e}"));
        let mut words = expected.split_whitespace();
        let start = match words.next() {
            Some("-") | None => None,
            Some(v) => Some(expected_value(v)),
        };
        let extent = match words.next() {
            Some("-") | None => None,
            Some(v) if v.starts_with('L') => Some(Extent::Count(expected_value(&v[1..]))),
            Some(v) if v.starts_with('E') => Some(Extent::End(expected_value(&v[1..]))),
            Some(v) => panic!("line {line_no}: bad extent `{v}`"),
        };
        let no_size_limit = words.next() == Some("?");
        assert_eq!(
            range,
            RangeArg {
                start,
                extent,
                no_size_limit
            },
            "line {line_no}: `{input}`"
        );
    }
}

#[test]
fn messages_follow_windbg_wording() {
    let env = FakeEnv::new();
    let message = |text: &str| evaluate(text, &env).unwrap_err().message;
    assert_eq!(message("foo!bar+1"), "Couldn't resolve error at 'foo!bar'");
    assert_eq!(message("1 + ) 2"), "Syntax error at ') 2'");
    assert_eq!(message("1 +"), "Numeric expression missing from '<EOL>'");
    assert_eq!(message("@zz"), "Bad register error at '@zz'");
    assert_eq!(message("poi(0)"), "Memory access error at 'poi(0)'");
    assert_eq!(message("4 / (1-1)"), "Divide by zero error at '4 / (1-1)'");
    let long = format!("1 {}", "x".repeat(100));
    assert!(message(&long).ends_with("...'"));
}

#[test]
fn pointer_size_four_reads_a_dword() {
    let mut env = FakeEnv::new();
    env.pointer_size = 4;
    assert_eq!(evaluate("poi(rsp+8)", &env), Ok(0x5566_7788));
}

#[test]
fn evaluate_prefix_stops_before_non_operators() {
    let env = FakeEnv::new();
    assert_eq!(evaluate_prefix("rax L20", &env), Ok((0x1000, 3)));
    assert_eq!(evaluate_prefix("  (rax) + 1 \"x\"", &env), Ok((0x1001, 11)));
    let err = evaluate_prefix("rax +", &env).unwrap_err();
    assert_eq!(err.code(), "missing_expression");
}

#[test]
fn parse_number_accepts_only_literals() {
    assert_eq!(parse_number("1a2c"), Some(0x1a2c));
    assert_eq!(parse_number("0n10"), Some(10));
    assert_eq!(parse_number("0x1`0000"), Some(0x10000));
    assert_eq!(parse_number("rax"), None);
    assert_eq!(parse_number(""), None);
    assert_eq!(parse_number("1 2"), None);
    assert_eq!(parse_number("1+2"), None);
}

#[test]
fn split_args_keeps_groups_whole() {
    assert_eq!(
        split_args(r#" ntdll!_PEB  @$peb poi( rsp + 8 ) "k; \"g\"" [a b] {c d}"#),
        vec![
            "ntdll!_PEB",
            "@$peb",
            "poi( rsp + 8 )",
            r#""k; \"g\"""#,
            "[a b]",
            "{c d}"
        ]
    );
    assert_eq!(split_args("   "), Vec::<&str>::new());
    assert_eq!(split_args("a (b c"), vec!["a", "(b c"]);
    assert_eq!(split_args("a) b"), vec!["a)", "b"]);
    assert_eq!(split_args_indexed("x  yz"), vec![(0, "x"), (3, "yz")]);
}

#[test]
fn caret_line_points_at_the_span() {
    assert_eq!(
        caret_line("poi(foo!bar)", 4..11),
        "poi(foo!bar)\n    ^^^^^^^"
    );
    assert_eq!(caret_line("1 +", 3..3), "1 +\n   ^");
    assert_eq!(caret_line("a\n\tbc", 3..4), "\tbc\n\t^");
    assert_eq!(caret_line("é x", 3..4), "é x\n  ^");
    assert_eq!(caret_line("abc", 10..20), "abc\n   ^");
    assert_eq!(caret_line("é", 1..2), "é\n^");
    let err = evaluate("1 + foo", &FakeEnv::new()).unwrap_err();
    assert_eq!(
        err.render("1 + foo"),
        "1 + foo\n    ^^^\nCouldn't resolve error at 'foo'"
    );
}

#[test]
fn limits_are_enforced() {
    let env = FakeEnv::new();
    let nested = |n: usize| format!("{}1{}", "(".repeat(n), ")".repeat(n));
    assert_eq!(evaluate(&nested(MAX_DEPTH), &env), Ok(1));
    assert_eq!(
        evaluate(&nested(MAX_DEPTH + 1), &env).unwrap_err().code(),
        "too_deep"
    );
    let negations = format!("{}1", "-".repeat(MAX_DEPTH + 1));
    assert_eq!(evaluate(&negations, &env).unwrap_err().code(), "too_deep");
    let pois = format!("{}rsp{}", "poi(".repeat(100), ")".repeat(100));
    assert_eq!(evaluate(&pois, &env).unwrap_err().code(), "memory_access");
    // A long flat chain stays within the length limit and evaluates.
    let sum = format!("{}1", "1+".repeat((MAX_EXPR_LEN - 1) / 2));
    assert!(sum.len() <= MAX_EXPR_LEN);
    assert_eq!(
        evaluate(&sum, &env),
        Ok(((MAX_EXPR_LEN - 1) / 2 + 1) as u64)
    );
    let too_long = "1".repeat(MAX_EXPR_LEN + 1);
    let err = evaluate(&too_long, &env).unwrap_err();
    assert_eq!(err.code(), "too_long");
    assert_eq!(parse_range(&too_long, &env).unwrap_err().code(), "too_long");
    let multibyte = "é".repeat(MAX_EXPR_LEN);
    let err = evaluate(&multibyte, &env).unwrap_err();
    assert!(multibyte.is_char_boundary(err.span.start));
}

/// A fixed-seed xorshift generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Builds a garbage string out of expression-ish fragments and odd characters.
fn garbage(rng: &mut Rng) -> String {
    const PIECES: &[&str] = &[
        "0x", "0n", "0t", "0y", "1", "ff", "`", "@", "$", "@$ip", "rax", "poi", "(", ")", "+", "-",
        "*", "/", "%", "mod", "<", ">", ">>>", "<<", "=", "!", "~", "&", "^", "|", " ", "::", "!",
        "crashy", "!main", "<int>", "L", "L?", "l", "é", "\u{0}", "\"", "hi", "by", "qwo", "not",
        "0", "9", "z", "_", "\t", "\n", "ʼ", "💥",
    ];
    let len = rng.below(24);
    (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect()
}

#[test]
fn garbage_never_panics() {
    let env = FakeEnv::new();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for _ in 0..20_000 {
        let text = garbage(&mut rng);
        for result in [
            evaluate(&text, &env).map(|_| ()),
            evaluate_prefix(&text, &env).map(|_| ()),
            parse_range(&text, &env).map(|_| ()),
        ] {
            if let Err(err) = result {
                assert!(err.span.start <= err.span.end && err.span.end <= text.len());
                assert!(text.is_char_boundary(err.span.start), "{text:?}: {err:?}");
                assert!(text.is_char_boundary(err.span.end), "{text:?}: {err:?}");
                assert!(!err.message.is_empty());
                let _ = err.render(&text);
            }
        }
        let _ = split_args(&text);
        let _ = parse_number(&text);
    }
}
