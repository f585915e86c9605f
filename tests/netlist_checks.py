"""Stimulus and checks for a stream core simulated from a netlist (``test_postsynth.py``: after
synthesis; ``test_postroute.py``: after place and route): the corpora and random adversarial
messages as the stream driver's input file, the netlist's model compared with the RTL's bit- and
cycle-exactly, and the outputs checked against the reference model."""

import array
import random

from amaranth.hdl import Shape

import corpora
from cocotb_axis_bench import random_messages
from utf8_gateware.hdl.error_kind import ErrorKind
from utf8_gateware.sim import engines, reference


def payload_field(core, port, name):
    """``(offset, width)`` of field ``name`` in the payload of stream ``port``."""
    field = core.signature.members[port].signature.members["payload"].shape[name]
    return field.offset, Shape.cast(field.shape).width


def stimulus(kind, rng):
    """The corpora (when present) and random adversarial messages, as lists of bytes / units."""
    found = []
    corpus = (corpora.ROOT / "README.md").is_file()
    if kind == "encode":
        if corpus:
            found += [list(case.units) for case in corpora.encode_cases() if case.units]
        found += random_messages("encoder", rng, 20000)
    else:
        if corpus:
            found += [case.data for case in corpora.decode_cases() if case.data]
            found.append(corpora.kuhn())
        found += random_messages("decoder", rng, 40000)
    return found


def driver_items(core, kind, messages):
    """``(bytes, in_bytes)`` of the driver's input file: one item per byte / unit (per beat of
    four bytes for the validator of several lanes), ``last`` on each message's final item."""
    last, _ = payload_field(core, "i", "last")
    if kind == "validate" and "count" in core.signature.members["i"].signature.members[
            "payload"].shape.members:
        count, _ = payload_field(core, "i", "count")
        words = []
        for message in messages:
            beats = [message[k:k + 4] for k in range(0, len(message), 4)]
            for index, beat in enumerate(beats):
                words.append(int.from_bytes(beat, "little") | (len(beat) << count) |
                             (int(index == len(beats) - 1) << last))
        return array.array("Q", words).tobytes(), 8
    words = [unit | (int(index == len(message) - 1) << last)
             for message in messages for index, unit in enumerate(message)]
    in_bytes = 2 if last < 16 else 8
    return array.array("H" if in_bytes == 2 else "Q", words).tobytes(), in_bytes


def split_outputs(core, result):
    """Output payloads split into messages (at each ``last``), as ints."""
    last, _ = payload_field(core, "o", "last")
    words = array.array({2: "H", 4: "I", 8: "Q"}[result.out_bytes])
    words.frombytes(result.data)
    messages, current = [], []
    for word in words:
        current.append(word)
        if (word >> last) & 1:
            messages.append(current)
            current = []
    assert not current, "outputs after the last `last`"
    return messages


def output_field(word, core, name):
    """Field ``name`` of output payload ``word``."""
    offset, width = payload_field(core, "o", name)
    return (word >> offset) & ((1 << width) - 1)


def check_reference(core, kind, errors, messages, outputs):
    """The outputs of each message are the reference model's (CPython's for the verdicts)."""
    def bits(word, name):
        return output_field(word, core, name)

    assert len(outputs) == len(messages)
    for message, got in zip(messages, outputs):
        if kind == "decode":
            decoded = [(bits(word, "codepoint"), ErrorKind(bits(word, "error"))) for word in got]
            assert decoded == [tuple(item) for item in reference.decode(message, errors)], message
            continue
        if kind == "encode":
            assert engines._parse_encoded(got, message, errors) == \
                tuple(reference.encode(message, errors)), message
            continue
        decoded = reference.decode(message, errors)
        flagged = [kind_ for _, kind_ in decoded if kind_ is not ErrorKind.NONE]
        if kind == "validate":
            try:
                bytes(message).decode("utf-8")
                offset = 0
            except UnicodeDecodeError as error:
                offset = error.start
            (word,) = got
            assert (bits(word, "valid"), bits(word, "offset"), bits(word, "error"),
                    bits(word, "errors")) == \
                (int(not flagged), offset, (flagged or [ErrorKind.NONE])[0].value,
                 len(flagged)), message
        else:
            data = b"".join(reference.encode_unit(cp, errors)[0] for cp, _ in decoded)
            assert bytes(bits(word, "data") for word in got) == data, message
            assert sum(bits(word, "error") != 0 for word in got) == len(flagged), message


def check_against_rtl(core, kind, errors, rtl, netlist, name):
    """``netlist`` (the netlist's :class:`~utf8_gateware.sim.compiled.StreamModel`) gives
    ``rtl``'s outputs and cycle counts on :func:`stimulus` (seeded by ``name``), with and without
    random source gaps and sink stalls, and those outputs are the reference model's."""
    messages = stimulus(kind, random.Random(name))
    items, in_bytes = driver_items(core, kind, messages)
    for options in ({}, {"gaps": 0.3, "stalls": 0.3, "seed": 7}):
        # The items are whole payloads (beats with their `last`), not lanes for the driver to pack.
        got = netlist.run(items, in_bytes=in_bytes, auto_last=False, lanes=False, **options)
        want = rtl.run(items, in_bytes=in_bytes, auto_last=False, lanes=False, **options)
        assert got.data == want.data, f"{name} {options}: outputs differ from the RTL's"
        assert got.cycles == want.cycles, f"{name} {options}: timing differs from the RTL's"
    check_reference(core, kind, errors, messages, split_outputs(core, got))
