//! Packet framing: `$data#cc`, acknowledgements, run-length decoding and escapes.
//!
//! [`PacketDecoder`] turns a byte stream into [`Event`]s. It never panics and bounds every
//! buffer, so arbitrary garbage from a peer only produces [`Event::Garbage`] or bad-checksum
//! packets. Outside a packet, `+` and `-` are acknowledgements and `0x03` is an interrupt;
//! inside a packet every byte up to `#` is data — including `+`, which the run-length
//! encoding uses as a repeat count.

/// Largest raw packet body accepted (between `$` and `#`).
pub const MAX_RAW_PACKET: usize = 1 << 20;
/// Largest packet after run-length expansion.
pub const MAX_EXPANDED_PACKET: usize = 16 << 20;

/// Something seen on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `+`: the last packet was received.
    Ack,
    /// `-`: the last packet must be sent again.
    Nack,
    /// `0x03`: an interrupt request (only stubs see these).
    Interrupt,
    /// A complete packet. `data` is run-length expanded but not unescaped (see [`unescape`]).
    Packet {
        /// The packet body after run-length expansion.
        data: Vec<u8>,
        /// Whether the checksum matched (and the run-length encoding was valid).
        checksum_ok: bool,
    },
    /// A byte outside any packet that means nothing, or an oversized packet that was dropped.
    Garbage(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Idle,
    Body,
    Check1,
    Check2(u8),
}

/// Incremental decoder for the bytes a peer sends.
#[derive(Debug)]
pub struct PacketDecoder {
    state: State,
    raw: Vec<u8>,
    sum: u8,
}

impl Default for PacketDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl PacketDecoder {
    /// A decoder waiting for the first byte.
    pub fn new() -> Self {
        PacketDecoder {
            state: State::Idle,
            raw: Vec::new(),
            sum: 0,
        }
    }

    /// Whether the decoder is in the middle of a packet.
    pub fn in_packet(&self) -> bool {
        self.state != State::Idle
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) {
        for &b in bytes {
            match self.state {
                State::Idle => match b {
                    b'$' => self.start(),
                    b'+' => out.push(Event::Ack),
                    b'-' => out.push(Event::Nack),
                    0x03 => out.push(Event::Interrupt),
                    other => out.push(Event::Garbage(other)),
                },
                State::Body => match b {
                    b'#' => self.state = State::Check1,
                    // A `$` inside a body means the peer restarted: resynchronise on it.
                    b'$' => {
                        out.push(Event::Garbage(b'$'));
                        self.start();
                    }
                    _ => {
                        if self.raw.len() >= MAX_RAW_PACKET {
                            out.push(Event::Garbage(b));
                            self.state = State::Idle;
                            self.raw = Vec::new();
                        } else {
                            self.raw.push(b);
                            self.sum = self.sum.wrapping_add(b);
                        }
                    }
                },
                State::Check1 => match hex_val(b) {
                    Some(v) => self.state = State::Check2(v),
                    None => self.finish(None, out),
                },
                State::Check2(hi) => {
                    let ck = hex_val(b).map(|lo| (hi << 4) | lo);
                    self.finish(ck, out);
                }
            }
        }
    }

    fn start(&mut self) {
        self.state = State::Body;
        self.raw.clear();
        self.sum = 0;
    }

    fn finish(&mut self, checksum: Option<u8>, out: &mut Vec<Event>) {
        self.state = State::Idle;
        let raw = std::mem::take(&mut self.raw);
        let sum_ok = checksum == Some(self.sum);
        match expand_rle(&raw) {
            Some(data) => out.push(Event::Packet {
                data,
                checksum_ok: sum_ok,
            }),
            None => out.push(Event::Packet {
                data: raw,
                checksum_ok: false,
            }),
        }
    }
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Expands run-length encoding: `X*n` is `X` followed by `n - 29` more copies of `X`.
/// `None` when a `*` has no character before it or no count after it, or the result is too big.
pub fn expand_rle(raw: &[u8]) -> Option<Vec<u8>> {
    if !raw.contains(&b'*') {
        return Some(raw.to_vec());
    }
    let mut out = Vec::with_capacity(raw.len() * 2);
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'*' {
            let prev = *out.last()?;
            let count = *raw.get(i + 1)?;
            let repeat = usize::from(count.checked_sub(29)?);
            if out.len() + repeat > MAX_EXPANDED_PACKET {
                return None;
            }
            out.extend(std::iter::repeat_n(prev, repeat));
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(out)
}

/// Removes binary escapes: `}` followed by `c` stands for `c ^ 0x20`.
/// A trailing lone `}` is dropped.
pub fn unescape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut it = data.iter();
    while let Some(&b) = it.next() {
        if b == b'}' {
            if let Some(&n) = it.next() {
                out.push(n ^ 0x20);
            }
        } else {
            out.push(b);
        }
    }
    out
}

/// Escapes `#`, `$`, `}` and `*` for binary packet data.
pub fn escape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for &b in data {
        if matches!(b, b'#' | b'$' | b'}' | b'*') {
            out.push(b'}');
            out.push(b ^ 0x20);
        } else {
            out.push(b);
        }
    }
    out
}

/// The modulo-256 sum of `data`.
pub fn checksum(data: &[u8]) -> u8 {
    data.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Frames `data` as `$data#cc` (no escaping: callers escape binary data first).
pub fn frame(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + 4);
    out.push(b'$');
    out.extend_from_slice(data);
    out.push(b'#');
    out.extend_from_slice(format!("{:02x}", checksum(data)).as_bytes());
    out
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Decodes hex pairs; `xx` (an unavailable byte in register replies) gives `None`.
/// Returns `None` overall when the text is not hex or has odd length.
pub fn from_hex_opt(text: &[u8]) -> Option<Vec<Option<u8>>> {
    if text.len() % 2 != 0 {
        return None;
    }
    text.chunks_exact(2)
        .map(|p| match (p[0], p[1]) {
            (b'x' | b'X', b'x' | b'X') => Some(None),
            (h, l) => Some(Some((hex_val(h)? << 4) | hex_val(l)?)),
        })
        .collect()
}

/// Decodes hex pairs strictly.
pub fn from_hex(text: &[u8]) -> Option<Vec<u8>> {
    from_hex_opt(text)?.into_iter().collect()
}

/// Parses a hex number (no prefix); `None` on empty, non-hex or overflow.
pub fn parse_hex_u64(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 16 {
        return None;
    }
    text.iter()
        .try_fold(0u64, |acc, &b| Some((acc << 4) | u64::from(hex_val(b)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Vec<Event> {
        let mut d = PacketDecoder::new();
        let mut out = Vec::new();
        d.feed(bytes, &mut out);
        out
    }

    #[test]
    fn frames_and_checksums() {
        assert_eq!(frame(b"OK"), b"$OK#9a");
        assert_eq!(
            decode(b"+$OK#9a"),
            vec![
                Event::Ack,
                Event::Packet {
                    data: b"OK".to_vec(),
                    checksum_ok: true
                }
            ]
        );
        assert_eq!(
            decode(b"$OK#9b"),
            vec![Event::Packet {
                data: b"OK".to_vec(),
                checksum_ok: false
            }]
        );
    }

    #[test]
    fn run_length_with_plus_as_data() {
        // '0* ' = "0000"; '0*+' = '0' and 43-29 = 14 more.
        assert_eq!(expand_rle(b"0* ").unwrap(), b"0000");
        assert_eq!(expand_rle(b"0*+").unwrap(), vec![b'0'; 15]);
        let body = b"T05a*+";
        let mut wire = frame(body);
        wire.insert(0, b'+');
        let ev = decode(&wire);
        assert_eq!(ev[0], Event::Ack);
        let Event::Packet { data, checksum_ok } = &ev[1] else {
            panic!("{ev:?}")
        };
        assert!(checksum_ok);
        assert_eq!(data.len(), 3 + 14 + 1);
        assert!(expand_rle(b"*a").is_none());
        assert!(expand_rle(b"a*").is_none());
        assert!(expand_rle(b"a*\x01").is_none());
    }

    #[test]
    fn escapes_round_trip() {
        let data = b"a#b$c}d*e";
        assert_eq!(unescape(&escape(data)), data);
        assert_eq!(unescape(b"}"), b"");
    }

    #[test]
    fn hex_helpers() {
        assert_eq!(from_hex(b"00ff10").unwrap(), vec![0, 255, 16]);
        assert_eq!(from_hex_opt(b"xx01").unwrap(), vec![None, Some(1)]);
        assert!(from_hex(b"0").is_none());
        assert!(from_hex(b"zz").is_none());
        assert_eq!(parse_hex_u64(b"401000"), Some(0x401000));
        assert_eq!(parse_hex_u64(b""), None);
        assert_eq!(parse_hex_u64(b"11112222333344445"), None);
        assert_eq!(to_hex(&[0xde, 0xad]), "dead");
    }

    #[test]
    fn garbage_and_resync() {
        let ev = decode(b"zz$ab$OK#9a\x03-");
        assert_eq!(ev[0], Event::Garbage(b'z'));
        assert!(ev.contains(&Event::Packet {
            data: b"OK".to_vec(),
            checksum_ok: true
        }));
        assert_eq!(ev[ev.len() - 2], Event::Interrupt);
        assert_eq!(ev[ev.len() - 1], Event::Nack);
    }

    /// Random bytes (fixed seed, xorshift) through the decoder and helpers: nothing panics,
    /// and feeding in pieces gives the same events as feeding at once.
    #[test]
    fn fuzz_decoder_never_panics() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet = b"$#+-*}0123456789abcdefOKT\x03 xX";
        for _ in 0..2000 {
            let len = (next() % 200) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 3 == 0 {
                        (r >> 8) as u8
                    } else {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    }
                })
                .collect();
            let whole = decode(&bytes);
            let mut d = PacketDecoder::new();
            let mut pieces = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                let n = 1 + (next() % 7) as usize;
                let end = (i + n).min(bytes.len());
                d.feed(&bytes[i..end], &mut pieces);
                i = end;
            }
            assert_eq!(whole, pieces);
            let _ = expand_rle(&bytes);
            let _ = unescape(&bytes);
            let _ = from_hex_opt(&bytes);
            let _ = parse_hex_u64(&bytes);
            let _ = crate::stop::StopReply::parse(&bytes);
            let _ =
                crate::target_xml::parse_features(&String::from_utf8_lossy(&bytes), &mut |_| {
                    Ok(String::from_utf8_lossy(&bytes).into_owned())
                });
        }
    }
}
