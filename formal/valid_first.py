# amaranth: UnusedElaboratable=no
"""Stream rule 3 of ``amaranth.lib.stream``, proven: a core's ``valid`` never waits for ``ready``.

:class:`OutputWithoutReady` drives a core's input with any stream that keeps the transmitter's
rules and holds its sink's ``ready`` low in every cycle, from power-up or any reset (the solver
may reset in any cycle). Once the core has taken an input with ``last`` (which ends a message,
and every message has an output: a code point, a byte, a verdict), ``o.valid`` must be high
within ``LATENCY + SLACK`` cycles (``3 x LATENCY`` for the cores whose stages wait a step while
the sink is not ready, :data:`WAITS`); and once high, it stays high (the output stream rules,
which ``assert_stream_rules`` checks with a ``ready`` that never comes). The decoders of
``utf-8-sig`` and ``utf-16`` are left out: a message of only a byte order mark has no output.

A core that waits for ``ready`` before its first output fails: the shift encoder did until stop
27, and deadlocked with a sink that, as stream rule 4 and AXI4-Stream allow, raises ``ready``
only after it sees ``valid`` (``tests/test_valid_before_ready.py`` runs such a sink in
simulation; the mutant in ``tests/test_formal_valid_first.py`` is a core that waits for
``ready`` once). So does a core that holds a finished message's output until more input comes:
this proof found that in the sanitiser at stop 28 (its line stopped while a prefix of the next
message was pending and the input paused; fixed the same stop).

A bounded model check of depth bound + 4: the first input can be taken in cycle 1 or 2
(registered ``ready``, the flush after reset), so every message ended in the first two cycles it
can be is followed for the whole bound; the cores are grouped (:data:`PROOFS`), one ``sby`` run
a group, at the depth of its deepest. The covers show the premise is reached: ``o.valid`` rises
after a message ended while ``ready`` was never high.
"""

from amaranth.hdl import Assert, Cover, Elaboratable, Module, Signal

from utf8_gateware.hdl.cesu8_expander import Cesu8Expander
from utf8_gateware.hdl.decoder import Utf8Decoder
from utf8_gateware.hdl.encoder import Utf8Encoder
from utf8_gateware.hdl.sanitizer import Utf8Sanitizer
from utf8_gateware.hdl.text_decoder import TextDecoder
from utf8_gateware.hdl.text_encoder import TextEncoder
from utf8_gateware.hdl.transcoder import Transcoder
from utf8_gateware.hdl.utf16_bytes import Utf16BomBytes, Utf16Bytes
from utf8_gateware.hdl.utf16_decoder import Utf16Decoder
from utf8_gateware.hdl.utf16_encoder import Utf16Encoder
from utf8_gateware.hdl.utf8_bom_writer import Utf8BomWriter
from utf8_gateware.hdl.utf16_to_utf8 import Utf16ToUtf8
from utf8_gateware.hdl.validator import Utf8Validator
from .checks import Proof, Together, assert_stream_rules, assume_beat_count, drive_source


__all__ = ["SLACK", "first_output_bound", "OutputWithoutReady", "CORES", "WAITS", "PROOFS"]


#: Cycles beyond a core's ``LATENCY`` that its output may take after the input that ends a
#: message, with a sink that is never ready.
SLACK = 2


def first_output_bound(core, waits):
    """The cycles within which ``core``'s output is offered after it took a message's last
    input, its sink never ready. ``waits``: its stages advance on their own only every other
    step while the sink is not ready (the shift encoder's ``idle`` flip-flop sets ``take`` the
    cycle after a step, and the sanitiser's front does the same): ``3 x LATENCY``."""
    return 3 * core.LATENCY if waits else core.LATENCY + SLACK


class OutputWithoutReady(Elaboratable):
    """``factory()`` (a core with ``i``, ``o`` and ``LATENCY``), its sink never ready: after an
    input with ``last`` is taken, ``o.valid`` is high within ``LATENCY + SLACK`` cycles."""
    def __init__(self, name, factory, waits=False):
        self.name, self.factory, self.waits = name, factory, waits

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.factory()
        bound = first_output_bound(core, self.waits)
        i_xfer = drive_source(m, core.i)
        assume_beat_count(m, core)
        m.d.comb += core.o.ready.eq(0)
        assert_stream_rules(m, core.o, f"{self.name}.o")
        ended = Signal()                     # a message's last input has been taken
        waited = Signal(range(bound + 2))    # cycles since then without o.valid
        with m.If(i_xfer & core.i.payload.last):
            m.d.sync += ended.eq(1)
        with m.If((ended | (i_xfer & core.i.payload.last)) & ~core.o.valid &
                  (waited <= bound)):
            m.d.sync += waited.eq(waited + 1)
        m.d.comb += [
            Assert(waited <= bound, f"{self.name}: no output within {bound} cycles of a "
                                    f"message's end, its sink never ready"),
            Cover(core.o.valid & (waited != 0)),
        ]
        return m

    def depth(self):
        """The BMC depth that follows a message ended in cycle 2 through the whole bound."""
        return first_output_bound(self.factory(), self.waits) + 4


#: The cores checked: every kind of output stage (the decoders' and validator's pipelines at one
#: and four lanes, the sanitiser's two fronts, the shift encoder in every encoding and policy
#: that changes its output stage, the RFC 2279 encoder, the UTF-16 cores, the ``utf-8-sig``
#: mark writer at the level of bytes, the transcoders that join a decoder to an encoder through
#: the buffer, the stages of the UTF-16 to UTF-16 transcoders (the decoder's units, the byte
#: stages without marker beats), the CESU-8 expander alone and after the sanitiser).
CORES = {
    "decoder-replace": lambda: Utf8Decoder("replace"),
    "decoder-escape": lambda: Utf8Decoder("surrogateescape"),
    "decoder-lanes4": lambda: Utf8Decoder("replace", lanes=4),
    "decoder-cesu-8-escape": lambda: Utf8Decoder("surrogateescape", encoding="cesu-8"),
    "decoder-rfc2279": lambda: Utf8Decoder("replace", encoding="utf-8-rfc2279"),
    "validator": lambda: Utf8Validator(counter_width=8),
    "validator-lanes4": lambda: Utf8Validator(lanes=4, counter_width=8),
    "sanitizer-replace": lambda: Utf8Sanitizer("replace"),
    "sanitizer-escape": lambda: Utf8Sanitizer("surrogateescape"),
    "encoder-replace": lambda: Utf8Encoder("replace"),
    "encoder-strict": lambda: Utf8Encoder("strict"),
    "encoder-escape": lambda: Utf8Encoder("surrogateescape"),
    "encoder-cesu-8": lambda: Utf8Encoder("replace", encoding="cesu-8"),
    "encoder-mutf-8": lambda: Utf8Encoder("replace", encoding="mutf-8"),
    "encoder-wtf-8": lambda: Utf8Encoder("replace", encoding="wtf-8"),
    "encoder-utf-8-sig": lambda: Utf8Encoder("replace", encoding="utf-8-sig"),
    "encoder-rfc2279": lambda: Utf8Encoder("replace", encoding="utf-8-rfc2279"),
    "utf16-encoder": lambda: Utf16Encoder(),
    "utf16-decoder": lambda: Utf16Decoder(),
    "utf16-decoder-units": lambda: Utf16Decoder(units=True),
    "utf16-bytes-units": lambda: Utf16Bytes("big", markers=False),
    "utf16-bom-bytes-units": lambda: Utf16BomBytes(markers=False),
    "utf16-to-utf8": lambda: Utf16ToUtf8(),
    "text-decoder-utf-16-le": lambda: TextDecoder("utf-16-le", "replace"),
    "text-encoder-utf-16": lambda: TextEncoder("utf-16", "replace"),
    "utf8-bom-writer": lambda: Utf8BomWriter(),
    "transcoder-to-utf-16-le": lambda: Transcoder("utf-8", "utf-16-le"),
    "transcoder-from-utf-16-le": lambda: Transcoder("utf-16-le", "utf-8"),
    "transcoder-to-cesu-8": lambda: Transcoder("utf-8", "cesu-8"),
    "expander-cesu-8": lambda: Cesu8Expander("cesu-8"),
    "expander-mutf-8": lambda: Cesu8Expander("mutf-8"),
}


#: The cores whose stages wait a step while the sink is not ready (the shift encoder's, in
#: the encoders and in the transcoders that end in one; the sanitiser's ``replace`` front; the
#: output stage of ``utf-16``'s ``Utf16BomBytes``, which is the shift encoder's, with marker
#: beats or without; ``Utf16ToUtf8``'s ``idle``, alone and in the transcoder from UTF-16).
WAITS = frozenset({*(name for name in CORES if name.startswith("encoder-")), "sanitizer-replace",
                   "transcoder-from-utf-16-le", "transcoder-to-cesu-8", "text-encoder-utf-16",
                   "utf16-bom-bytes-units", "utf16-to-utf8"})


def _harness(name):
    return OutputWithoutReady(name, CORES[name], waits=name in WAITS)


def _group(names):
    depth = max(_harness(name).depth() for name in names)
    return depth, lambda: Together(*(_harness(name) for name in names))


def _proofs(groups):
    proofs = []
    for title, names in groups:
        depth, build = _group(names)
        proofs.append(Proof(
            f"valid-first-{title}",
            f"stream rule 3 ({', '.join(names)}): with a sink that is never ready, a message's "
            f"output is offered within LATENCY + {SLACK} cycles of its last input (3 x LATENCY "
            f"where the stages wait a step); output stream rules", "bmc", depth, depth,
            build, cost=10))
    return proofs


#: Grouped by size, so that one ``sby`` run proves several small cores at the same depth.
PROOFS = _proofs([
    ("encoders", [name for name in CORES if name.startswith("encoder-")]),
    ("decoders", [name for name in CORES if name.startswith("decoder-")]),
    ("utf16", [name for name in CORES if name.startswith(("utf16-", "text-"))] +
              ["transcoder-to-utf-16-le", "utf8-bom-writer"]),
    ("validators", ["validator", "validator-lanes4"]),
    ("sanitizers", ["sanitizer-replace", "sanitizer-escape"]),
    ("transcoders", ["transcoder-from-utf-16-le"]),
    # (the sanitiser and the expander: LATENCY 17, a deeper run of its own)
    ("transcoder-to-cesu-8", ["transcoder-to-cesu-8"]),
    ("expanders", ["expander-cesu-8", "expander-mutf-8"]),
])
