"""Reading a record file's chunks from Python, for tests and bench/ scripts
(docs/record-file.md): the chunks with their payloads as before compression,
and the op events of EVENTS (raw) and OP_EVENTS (packed) payloads."""
import ctypes
import struct

EVENTS, OP_TABLE, OP_EVENTS = 4, 3, 27
RAW_EVENT_BYTES = 32


def _zstd():
    lib = ctypes.CDLL("libzstd.so.1")
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    return lib


def decompress(data, size):
    """A chunk's zstd payload, decompressed to the `size` bytes its header says."""
    lib = _zstd()
    out = ctypes.create_string_buffer(size)
    n = lib.ZSTD_decompress(out, size, data, len(data))
    if lib.ZSTD_isError(n) or n != size:
        raise ValueError("a chunk payload does not decompress")
    return out.raw


def record_chunks(data):
    """(offset, type, payload as before compression, stored length) of each chunk: a
    16-byte file header, then chunks of {u32 type, u32 length, u32 raw_length, u32
    crc}; since version 6 a non-zero raw_length says the payload is compressed."""
    version = struct.unpack_from("<I", data, 8)[0]
    chunks, off = [], 16
    while off + 16 <= len(data):
        chunk_type, length, raw = struct.unpack_from("<III", data, off)
        payload = bytes(data[off + 16:off + 16 + length])
        if version >= 6 and raw:
            payload = decompress(payload, raw)
        chunks.append((off, chunk_type, payload, length))
        off += 16 + length
    return chunks


def _varint(payload, pos):
    value, shift = 0, 0
    while True:
        byte = payload[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def op_events(chunk_type, payload):
    """(kind, op_id) of each event of an EVENTS or OP_EVENTS payload (raw 32-byte
    gp_events: op_id at 24, kind at 28; packed: userspace/record/packed_events.h)."""
    if chunk_type == EVENTS:
        return [struct.unpack_from("<IH", payload, off + 24)[::-1] for off in range(0, len(payload), RAW_EVENT_BYTES)]
    count = struct.unpack_from("<I", payload, 8)[0]
    events, pos = [], 12
    for _ in range(count):
        head = payload[pos]
        pos += 1
        if not head & 0x10:  # tid
            _, pos = _varint(payload, pos)
        if not head & 0x20:  # pid
            _, pos = _varint(payload, pos)
        _, pos = _varint(payload, pos)  # ts
        if not head & 0x40:  # sp
            _, pos = _varint(payload, pos)
        op, pos = _varint(payload, pos)
        events.append((head & 0x0F, (op - 1) & 0xFFFFFFFF))
    return events
