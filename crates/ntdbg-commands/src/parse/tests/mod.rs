//! Tests for command splitting and command-word parsing: the vector files, error
//! rendering, and a fixed-seed garbage-input loop that checks nothing panics.

use super::*;

/// The non-comment lines of a vector file as (line number, input, expected). The input is
/// the text before the last `=>` minus one separating space; `⏎` stands for a newline.
fn vector_lines(text: &str) -> Vec<(usize, String, String)> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        .map(|(i, line)| {
            let (input, expected) = line
                .rsplit_once("=>")
                .unwrap_or_else(|| panic!("line {}: no `=>`", i + 1));
            let input = input.strip_suffix(' ').unwrap_or(input);
            (
                i + 1,
                input.replace('⏎', "\n"),
                expected.trim().replace('⏎', "\n"),
            )
        })
        .collect()
}

/// The `«...»` groups of an expected string.
fn guillemets(text: &str) -> Vec<&str> {
    text.split('«')
        .skip(1)
        .map(|part| part.split_once('»').map_or(part, |(inside, _)| inside))
        .collect()
}

/// Checks an `error <code> at <start>..<end>` expectation.
fn check_error(line_no: usize, input: &str, err: &ParseError, spec: &str) {
    let mut words = spec.split_whitespace();
    assert_eq!(
        Some(err.code()),
        words.next(),
        "line {line_no}: `{input}`: {err:?}"
    );
    if words.next() == Some("at") {
        let span = words.next().unwrap_or_default();
        let (start, end) = span.split_once("..").expect("span as start..end");
        let span = start.parse().expect("start")..end.parse().expect("end");
        assert_eq!(err.span, span, "line {line_no}: `{input}`: wrong span");
    }
}

#[test]
fn split_vectors() {
    let cases = vector_lines(include_str!("split.txt"));
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    for (line_no, input, expected) in cases {
        let result = split_commands(&input);
        if let Some(spec) = expected.strip_prefix("error ") {
            match result {
                Ok(commands) => panic!("line {line_no}: `{input}` gave {commands:?}"),
                Err(err) => check_error(line_no, &input, &err, spec),
            }
            continue;
        }
        let commands = result.unwrap_or_else(|e| panic!("line {line_no}: `{input}`: {e}"));
        let values: Vec<&str> = commands.iter().map(|c| c.value).collect();
        assert_eq!(values, guillemets(&expected), "line {line_no}: `{input}`");
        for command in &commands {
            assert_eq!(
                &input[command.span.clone()],
                command.value,
                "line {line_no}"
            );
        }
    }
}

#[test]
fn command_vectors() {
    let cases = vector_lines(include_str!("commands.txt"));
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    for (line_no, input, expected) in cases {
        let result = parse_command(&input);
        if let Some(spec) = expected.strip_prefix("error ") {
            match result {
                Ok(command) => panic!("line {line_no}: `{input}` gave {command:?}"),
                Err(err) => check_error(line_no, &input, &err, spec),
            }
            continue;
        }
        let command = result.unwrap_or_else(|e| panic!("line {line_no}: `{input}`: {e}"));
        let thread = match expected.split_whitespace().next() {
            Some("-") => None,
            Some(".") => Some(ThreadSelector::Current),
            Some("#") => Some(ThreadSelector::Event),
            Some("*") => Some(ThreadSelector::All),
            Some(id) if id.starts_with("~0x") => Some(ThreadSelector::Id(
                u32::from_str_radix(&id[3..], 16).expect("hex thread id"),
            )),
            Some(index) => Some(ThreadSelector::Index(index.parse().expect("thread index"))),
            None => panic!("line {line_no}: no expectation"),
        };
        let parts = guillemets(&expected);
        assert_eq!(parts.len(), 2, "line {line_no}: expected «name» «args»");
        assert_eq!(command.thread, thread, "line {line_no}: `{input}`");
        assert_eq!(command.name, parts[0], "line {line_no}: `{input}`");
        assert_eq!(command.args, parts[1], "line {line_no}: `{input}`");
        assert_eq!(command.name_lower, parts[0].to_ascii_lowercase());
        assert_eq!(&input[command.name_span.clone()], command.name);
        assert!(input[command.args_offset..].starts_with(command.args));
    }
}

#[test]
fn errors_render_with_a_caret() {
    let line = "r; .echo \"oops";
    let err = split_commands(line).unwrap_err();
    assert_eq!(
        err.render(line),
        "r; .echo \"oops\n         ^^^^^\nSyntax error: unterminated quote"
    );
    assert_eq!(err.to_string(), "Syntax error: unterminated quote");

    let batch = "r; 123 x";
    let commands = split_commands(batch).unwrap();
    let err = parse_command(commands[1].value)
        .unwrap_err()
        .offset_by(commands[1].span.start);
    assert_eq!(err.render(batch), "r; 123 x\n   ^^^\nSyntax error in '123'");
}

#[test]
fn args_offset_points_into_the_text() {
    let command = parse_command("  ~2  kb   20  ").unwrap();
    assert_eq!(command.args_offset, 11);
    assert_eq!(command.name_span, 6..8);
    let alone = parse_command("~3").unwrap();
    assert_eq!((alone.name, alone.args, alone.args_offset), ("~", "", 2));
}

/// A fixed-seed xorshift generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

#[test]
fn garbage_never_panics() {
    const PIECES: &[&str] = &[
        "~",
        "~~[",
        "]",
        "[",
        "*",
        "#",
        ".",
        "!",
        "?",
        "??",
        "|",
        "$$",
        "$<",
        "$$>a<",
        ";",
        "\n",
        "\"",
        "\\",
        "{",
        "}",
        "(",
        ")",
        " ",
        "k",
        "kb",
        "r",
        "1a",
        "0x",
        "99999999999",
        "é",
        "💥",
        "\t",
        "s",
        "+",
        "@",
        "_",
    ];
    let mut rng = Rng(0x0dd_ba11_5eed_0002);
    for _ in 0..20_000 {
        let len = rng.below(20);
        let text: String = (0..len).map(|_| PIECES[rng.below(PIECES.len())]).collect();
        match split_commands(&text) {
            Ok(commands) => {
                for command in commands {
                    assert_eq!(&text[command.span.clone()], command.value);
                    if let Err(err) = parse_command(command.value) {
                        let _ = err.offset_by(command.span.start).render(&text);
                    }
                }
            }
            Err(err) => {
                assert!(
                    text.is_char_boundary(err.span.start) && text.is_char_boundary(err.span.end)
                );
                let _ = err.render(&text);
            }
        }
        match parse_command(&text) {
            Ok(command) => {
                assert_eq!(&text[command.name_span.clone()], command.name);
                assert!(text[command.args_offset..].starts_with(command.args));
            }
            Err(err) => {
                assert!(err.span.start <= err.span.end && err.span.end <= text.len());
                assert!(
                    text.is_char_boundary(err.span.start) && text.is_char_boundary(err.span.end)
                );
            }
        }
    }
}
