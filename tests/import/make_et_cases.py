#!/usr/bin/env python3
"""Writes the binary Chakra cases (chakra-et-*/input): hand-encoded
protobuf records, each wrong in one way. Rerun after changing a case:
    python3 tests/import/make_et_cases.py
The expected error lines sit beside them (chakra-et-*/error)."""
import os


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def attr_int(name, v):
    return field(1, 2, name.encode()) + field(9, 0, v)


def node(nid, name, ntype, data=(), attrs=(), duration=0):
    body = field(1, 0, nid) + field(2, 2, name.encode()) + field(3, 0, ntype)
    if data:
        body += field(5, 2, b"".join(varint(d) for d in data))
    if duration:
        body += field(7, 0, duration)
    for a in attrs:
        body += field(10, 2, a)
    return body


def record(msg):
    return varint(len(msg)) + msg


META = record(field(1, 2, b"0.0.4"))
COMP = node(1, "fwd", 4, duration=10)
CASES = {
    "chakra-et-truncated": META + record(COMP)[:-3],
    "chakra-et-not-metadata": record(b"\xff\xff\xff"),
    "chakra-et-length-too-large": META + varint(1 << 40),
    "chakra-et-unknown-dependency":
        META + record(COMP) + record(node(2, "bwd", 4, data=[7])),
    "chakra-et-storage-node": META + record(node(1, "ckpt", 8)),
    "chakra-et-gather":
        META + record(node(1, "g", 7, attrs=[attr_int("comm_type", 3)])),
    "chakra-et-bad-node": META + record(COMP) + record(b"\x08\xff"),
    "chakra-et-cycle": META + record(node(1, "a", 4, data=[2]))
        + record(node(2, "b", 4, data=[1])),
}

here = os.path.dirname(os.path.abspath(__file__))
for name, data in CASES.items():
    os.makedirs(os.path.join(here, name), exist_ok=True)
    with open(os.path.join(here, name, "input"), "wb") as f:
        f.write(data)
    with open(os.path.join(here, name, "args"), "w") as f:
        f.write("chakra\n")
