"""Writes a copy of a PDB whose first C13 line block of module MODNAME claims far more lines
than the block holds (pdb2 slices past the block and panics).

crashy-c13-line-count.pdb here was made by
    python3 make.py testdata/crashy.pdb crashy-c13-line-count.pdb crashy
"""
import struct, sys
src, dst, modname = sys.argv[1], sys.argv[2], sys.argv[3]
b = bytearray(open(src, "rb").read())
bs, = struct.unpack_from("<I", b, 32)
ndir, = struct.unpack_from("<I", b, 44)
bmap, = struct.unpack_from("<I", b, 52)
dir_blocks = [struct.unpack_from("<I", b, bmap * bs + 4 * i)[0] for i in range((ndir + bs - 1) // bs)]
d = b"".join(bytes(b[x * bs:(x + 1) * bs]) for x in dir_blocks)[:ndir]
n, = struct.unpack_from("<I", d, 0)
sizes = list(struct.unpack_from(f"<{n}I", d, 4))
pos = 4 + 4 * n
blocks = []
for s in sizes:
    k = 0 if s == 0xFFFFFFFF else (s + bs - 1) // bs
    blocks.append(list(struct.unpack_from(f"<{k}I", d, pos)))
    pos += 4 * k
def read(stream, off, ln):
    return bytes(b[blocks[stream][(off + i) // bs] * bs + (off + i) % bs] for i in range(ln))
def where(stream, off):
    return blocks[stream][off // bs] * bs + off % bs
dbi = read(3, 0, sizes[3])
modinfo_size, = struct.unpack_from("<i", dbi, 24)
p = 64
while p < 64 + modinfo_size:
    stream, symsz, c11, c13 = struct.unpack_from("<HIII", dbi, p + 34)
    names = dbi[p + 64:].split(b"\0", 2)
    name = names[0].decode("latin-1")
    p += 64 + len(names[0]) + 1 + len(names[1]) + 1
    p = (p + 3) & ~3
    if modname in name and c13:
        off = symsz + c11
        end = off + c13
        while off < end:
            kind, ln = struct.unpack_from("<II", read(stream, off, 8))
            if kind == 0xF2:
                block = off + 8 + 12  # past the subsection header and the lines header
                at = where(stream, block + 4)  # num_lines of the first block
                print(name, "num_lines was", struct.unpack_from("<I", b, at)[0])
                struct.pack_into("<I", b, at, 0x00100000)
                open(dst, "wb").write(b)
                sys.exit(0)
            off += 8 + ((ln + 3) & ~3)
sys.exit("no line subsection found")
