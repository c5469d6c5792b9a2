//! Benchmark, not a test: what iced-x86 costs the first time an instruction is decoded and
//! formatted in a process (it builds its decoder and formatter tables then), against the same
//! work once the tables exist. One test in its own binary, so the tables are still unbuilt.
//!
//! `cargo test -p ntdbg-engine --release --test engine disasm_setup_cost:: -- --ignored --nocapture`

use std::time::{Duration, Instant};

use iced_x86::{Decoder, DecoderOptions, Formatter, MasmFormatter};
use ntdbg_engine::disasm::{instruction_registers, Bitness};

/// `mov dword ptr [rcx],1234h`, the winelab crash's faulting instruction.
const FAULTING: [u8; 6] = [0xc7, 0x01, 0x34, 0x12, 0x00, 0x00];

fn timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let out = work();
    (out, started.elapsed())
}

#[test]
#[ignore]
fn first_decode_and_format_cost() {
    let (instruction, decoder_tables) =
        timed(|| Decoder::with_ip(64, &FAULTING, 0, DecoderOptions::NONE).decode());
    let (_, formatter_tables) = timed(|| {
        let mut text = String::new();
        MasmFormatter::new().format(&instruction, &mut text);
        text
    });
    let mut steady = Duration::MAX;
    for _ in 0..100 {
        let (text, took) = timed(|| instruction_registers(Bitness::Bits64, &FAULTING, 0x1000));
        assert_eq!(
            text.map(|t| t.0).as_deref(),
            Some("mov dword ptr [rcx],1234h")
        );
        steady = steady.min(took);
    }
    let setup = decoder_tables + formatter_tables;
    println!(
        "first decode {decoder_tables:?} (decoder tables), first format {formatter_tables:?} \
         (MASM formatter tables); afterwards decode + format + registers {steady:?} (best of \
         100): the first instruction costs {:.0}x a later one",
        setup.as_secs_f64() / steady.as_secs_f64().max(1e-9)
    );
}
