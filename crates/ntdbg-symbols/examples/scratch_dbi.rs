use pdb_addr2line::pdb::{self, PDB};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let mut pdb = PDB::open(std::fs::File::open(path).unwrap()).unwrap();
    let dbi = pdb.raw_stream(pdb::StreamIndex(3)).unwrap().unwrap();
    let d = dbi.as_slice();
    let i32_at = |at: usize| i32::from_le_bytes(d[at..at + 4].try_into().unwrap()) as usize;
    let skip: usize = [24, 28, 32, 36, 40, 52].iter().map(|&a| i32_at(a)).sum();
    let at = 64 + skip;
    let size = i32_at(48);
    let idx: Vec<u16> = (0..size / 2).map(|i| u16::from_le_bytes([d[at + 2 * i], d[at + 2 * i + 1]])).collect();
    println!("{idx:?}");
    for (i, s) in idx.iter().enumerate() {
        if *s != 0xffff {
            let st = pdb.raw_stream(pdb::StreamIndex(*s)).unwrap();
            println!("{i}: stream {s} len {:?}", st.map(|s| s.as_slice().len()));
        }
    }
    let am = pdb.address_map();
    println!("address_map ok: {}", am.is_ok());
}
