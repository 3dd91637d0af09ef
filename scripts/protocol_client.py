#!/usr/bin/env python3
"""A FlowKit client written from docs/PROTOCOL.md alone, with its own decoder.

It keeps the protocol document honest: the integration tests run it against a live cluster, and it
shares no code with the Swift implementation. It needs pyzmq (`python3 -m pip install pyzmq`).

    protocol_client.py --node tcp://127.0.0.1:7410 --publish tcp://127.0.0.1:7401 \
                       --sync tcp://127.0.0.1:7402 --address counter/py --count 5

It subscribes to the publish socket, emits `count` increments through the node, decodes every
ENTRIES and HEARTBEAT message it sees for the address, checks seqs, fetches the same entries again
with a RANGE_REQUEST, reads the state with QUERY, sends a few malformed requests, and prints one
JSON line with what it found. It exits 0 only if everything matched.
"""

import argparse
import json
import struct
import sys
import time

import zmq

VERSION = 4
EMIT, EMITTED, QUERY, STATE, ERROR = 0x30, 0x31, 0x32, 0x33, 0x7F
ENTRIES, HEARTBEAT = 0x10, 0x11
RANGE_REQUEST, RANGE = 0x20, 0x21


def header(message_type):
    return b"FK" + bytes([VERSION, message_type])


def short_string(text):
    data = text.encode("utf-8")
    return struct.pack(">H", len(data)) + data


def read_header(frame):
    if frame[:2] != b"FK":
        raise ValueError("bad magic")
    if frame[2] != VERSION:
        raise ValueError("bad version %d" % frame[2])
    return frame[3]


def records(frame):
    """Splits a records frame: u32 length, then that many bytes, until the frame ends."""
    offset, out = 0, []
    while offset < len(frame):
        (length,) = struct.unpack_from(">I", frame, offset)
        offset += 4
        out.append(frame[offset:offset + length])
        offset += length
    if offset != len(frame):
        raise ValueError("records overrun the frame")
    return out


def decode_entry(record):
    """Section 4.1: the 52-byte fixed part, the address short-string, then the payload."""
    (seq, epoch, kind, codec, version, origin, session, submission, submitted_at, committed_at) = \
        struct.unpack_from(">QIBBHIQQQQ", record, 0)
    (address_length,) = struct.unpack_from(">H", record, 52)
    address = record[54:54 + address_length].decode("utf-8")
    payload = record[54 + address_length:]
    return {
        "seq": seq, "epoch": epoch, "kind": kind, "codec": codec, "version": version, "origin": origin,
        "session": session, "submission": submission, "submittedAt": submitted_at,
        "committedAt": committed_at, "address": address, "payload": payload,
    }


def decode_error(frame):
    request, code = struct.unpack_from(">QH", frame, 4)
    (length,) = struct.unpack_from(">H", frame, 14)
    return request, code, frame[16:16 + length].decode("utf-8")


def request_reply(socket, frames, timeout_ms=10000):
    socket.send_multipart(frames)
    if not socket.poll(timeout_ms):
        raise TimeoutError("no reply within %d ms" % timeout_ms)
    return socket.recv_multipart()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True)
    parser.add_argument("--publish", required=True)
    parser.add_argument("--sync", required=True)
    parser.add_argument("--address", default="counter/protocol-py")
    parser.add_argument("--count", type=int, default=5)
    args = parser.parse_args()

    context = zmq.Context()
    subscriber = context.socket(zmq.SUB)
    subscriber.setsockopt(zmq.SUBSCRIBE, args.address.encode())
    subscriber.setsockopt(zmq.SUBSCRIBE, b"$hb")
    subscriber.connect(args.publish)
    node = context.socket(zmq.DEALER)
    node.connect(args.node)
    sync = context.socket(zmq.DEALER)
    sync.connect(args.sync)
    failures = []

    # Wait for a heartbeat so the subscription is live before emitting (the slow-joiner problem).
    deadline = time.time() + 10
    head = None
    while time.time() < deadline and head is None:
        if subscriber.poll(200):
            frames = subscriber.recv_multipart()
            if frames[0] == b"$hb" and read_header(frames[1]) == HEARTBEAT:
                _epoch, head, _time = struct.unpack_from(">IQQ", frames[1], 4)
    if head is None:
        failures.append("no heartbeat on $hb")

    # EMIT increments, waiting for applied.
    seqs = []
    for request in range(1, args.count + 1):
        reply = request_reply(node, [
            header(EMIT) + struct.pack(">QBB", request, 1, 1) + short_string(args.address),
            b'{"increment":{}}',
        ])
        kind = read_header(reply[0])
        if kind != EMITTED:
            failures.append("EMIT answered with type %#x: %r" % (kind, decode_error(reply[0]) if kind == ERROR else reply))
            continue
        answered, seq, _epoch, _applied = struct.unpack_from(">QQIB", reply[0], 4)
        if answered != request:
            failures.append("EMITTED for request %d, expected %d" % (answered, request))
        seqs.append(seq)

    # Collect the published entries for those seqs.
    published = {}
    deadline = time.time() + 10
    while time.time() < deadline and not set(seqs) <= set(published):
        if not subscriber.poll(200):
            continue
        frames = subscriber.recv_multipart()
        if frames[0] == b"$hb":
            continue
        if read_header(frames[1]) != ENTRIES or len(frames) != 3:
            failures.append("unexpected message on topic %r" % frames[0])
            continue
        entries = [decode_entry(record) for record in records(frames[2])]
        for previous, entry in zip(entries, entries[1:]):
            if entry["seq"] != previous["seq"] + 1:
                failures.append("an ENTRIES message with non-consecutive seqs")
        for entry in entries:
            if entry["address"] != frames[0].decode():
                failures.append("entry address %s under topic %s" % (entry["address"], frames[0]))
            published[entry["seq"]] = entry
    missing = sorted(set(seqs) - set(published))
    if missing:
        failures.append("never saw published seqs %s" % missing)
    for seq in seqs:
        entry = published.get(seq)
        if entry and (entry["kind"] != 1 or entry["codec"] != 1 or json.loads(entry["payload"]) != {"increment": {}}):
            failures.append("entry %d decoded as %r" % (seq, entry))

    # RANGE_REQUEST the same seqs from the sync socket.
    if seqs:
        reply = request_reply(sync, [header(RANGE_REQUEST) + struct.pack(">QQQI", 77, min(seqs), max(seqs), 10000)])
        if read_header(reply[0]) != RANGE:
            failures.append("RANGE_REQUEST answered with %r" % (decode_error(reply[0]),))
        else:
            request, _epoch, range_head = struct.unpack_from(">QIQ", reply[0], 4)
            ranged = [decode_entry(record) for record in records(reply[1])]
            if request != 77 or [entry["seq"] for entry in ranged] != list(range(min(seqs), max(seqs) + 1)):
                failures.append("RANGE returned seqs %s" % [entry["seq"] for entry in ranged])
            for entry in ranged:
                if entry["seq"] in published and entry["payload"] != published[entry["seq"]]["payload"]:
                    failures.append("RANGE entry %d differs from the published one" % entry["seq"])

    # QUERY the state once the node applied the last seq.
    state = None
    reply = request_reply(node, [header(QUERY) + struct.pack(">QQ", 1000, max(seqs or [0])) + short_string(args.address)])
    if read_header(reply[0]) != STATE:
        failures.append("QUERY answered with %r" % (decode_error(reply[0]),))
    else:
        _request, applied, last_seq = struct.unpack_from(">QQQ", reply[0], 4)
        state = json.loads(reply[1])
        if last_seq != max(seqs or [0]) or applied < last_seq:
            failures.append("STATE lastSeq %d applied %d" % (last_seq, applied))

    # Malformed requests get ERROR replies with the documented codes.
    expected = [
        ([header(EMIT) + struct.pack(">QBB", 2000, 0, 1) + short_string(args.address)], 1),   # one frame
        ([b"XX\x01\x30" + bytes(12)], 2),                                                    # bad magic
        ([b"FK\x09\x30" + bytes(12)], 3),                                                    # version 9
        ([header(QUERY) + b"\x00\x01"], 4),                                                  # truncated
        ([header(0x6E) + bytes(8)], 5),                                                      # unknown type
        ([header(EMIT) + struct.pack(">QBB", 2001, 0, 1) + short_string("nosuch/x"), b"{}"], 7),
        ([header(EMIT) + struct.pack(">QBB", 2002, 0, 1) + short_string(args.address), b'{"nope":{}}'], 8),
    ]
    for frames, code in expected:
        reply = request_reply(node, frames)
        if read_header(reply[0]) != ERROR:
            failures.append("malformed request %r was not refused" % frames)
            continue
        _request, got, message = decode_error(reply[0])
        if got != code:
            failures.append("expected error code %d, got %d (%s)" % (code, got, message))

    print(json.dumps({"seqs": seqs, "published": sorted(published), "state": state, "failures": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
