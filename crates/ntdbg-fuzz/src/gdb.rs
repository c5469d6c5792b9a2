//! Entry point over bytes a GDB remote stub sends.

use ntdbg_gdbremote::packet::{from_hex_opt, unescape, Event, PacketDecoder};
use ntdbg_gdbremote::target_xml::parse_features;
use ntdbg_gdbremote::{Features, GdbError, StopReply, ThreadId};

/// A byte stream from a stub, fed to the packet decoder in two pieces (split at the first
/// byte's value), and every packet decoded the ways the client reads replies: stop reply,
/// `qSupported` features, hex register/memory data, thread ids and `target.xml`.
pub fn gdb_packet(data: &[u8]) {
    let split = data.first().map_or(0, |b| usize::from(*b)).min(data.len());
    let mut decoder = PacketDecoder::new();
    let mut events = Vec::new();
    decoder.feed(&data[..split], &mut events);
    decoder.feed(&data[split..], &mut events);
    for event in events {
        if let Event::Packet { data, .. } = event {
            let body = unescape(&data);
            let _ = StopReply::parse(&body);
            let _ = Features::parse(&body);
            let _ = from_hex_opt(&body);
            let _ = ThreadId::parse(&body);
            let xml = String::from_utf8_lossy(&body);
            let mut fetch = |href: &str| -> ntdbg_gdbremote::Result<String> {
                Err(GdbError::Protocol(format!("no include {href}")))
            };
            let _ = parse_features(&xml, &mut fetch);
        }
    }
}
