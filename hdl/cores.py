"""The buildable cores: one table of names, classes and parameters, shared by ``synth``,
``export`` and the benchmark.

* :data:`BUILDABLE` -- every core that can be built alone by name (:class:`CoreSpec`);
  :data:`CORES` -- the ones with one byte or code-point stream in and one out, which
  :class:`~.axi_stream.AxiStreamAdapter` can wrap (``export``), as ``(class, error policies)``.
* :func:`core_parameters` -- a core's parameters and their defaults, read from its
  ``check_parameters`` (:class:`~.component.CheckedComponent`), never retyped here.
* :func:`parameter_choices` -- the values a parameter may take, from the core's own constants
  (the decoder's ``LANES``, the error policies).
* :func:`make_core` -- a core by name with parameters, checked (one-line :class:`ValueError` /
  :class:`TypeError`).
"""

import inspect
import sys
from dataclasses import dataclass, field

from .cesu8_expander import EXPANSIONS, Cesu8Expander
from .decoder import DECODE_ERRORS, LANES, Utf8Decoder
from .decoder_family import DECODER_ENCODINGS
from .encoder import ENCODE_ERRORS, ENCODER_ENCODINGS, Utf8Encoder
from .lane_packer import LanePacker
from .layouts import CodepointLaneLayout
from .sanitizer import SANITIZE_ERRORS, Utf8Sanitizer
from .text_decoder import DECODINGS, TextDecoder
from .text_encoder import ENCODINGS, TextEncoder
from .transcoder import TRANSCODE_ERRORS, Transcoder
from .utf16_bom_units import Utf16BomUnits
from .utf16_bom_writer import Utf16BomWriter
from .utf16_bytes import Utf16BomBytes, Utf16Bytes
from .utf16_decoder import UTF16_DECODE_ERRORS, Utf16Decoder
from .utf16_encoder import UTF16_ENCODE_ERRORS, Utf16Encoder
from .utf16_units import BYTE_ORDERS, Utf16Units
from .utf8_bom_writer import Utf8BomWriter
from .validator import Utf8Validator


__all__ = ["CoreSpec", "BUILDABLE", "CORES", "INTERNAL_PARAMETERS", "core_parameters",
           "parameter_choices", "parameter_table", "make_core"]


@dataclass(frozen=True)
class CoreSpec:
    """A core that can be built alone by name.

    ``cls``: a :class:`~.component.CheckedComponent`; ``errors``: its error policies (the
    first is the default; empty if it takes none); ``fixed``: parameters the table sets (not
    user parameters, e.g. the lane layout of :class:`~.lane_packer.LanePacker`); ``defaults``:
    defaults for parameters its ``check_parameters`` requires; ``choices``: the constant that
    lists a parameter's values where the core's module does not define it under the
    parameter's name; ``axi_stream``: whether the AXI4-Stream adapter can wrap it."""
    cls: type
    errors: tuple = ()
    fixed: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    axi_stream: bool = True


def _policies(encodings):
    """Every error policy of ``encodings`` (``{encoding: policies}``), in order; the core
    checks those of its encoding."""
    return tuple(dict.fromkeys(policy for policies in encodings.values() for policy in policies))


#: Every core that ``synth`` (and the benchmark) can build by name.
BUILDABLE = {
    "decoder":     CoreSpec(Utf8Decoder, DECODE_ERRORS,
                            choices={"encoding": DECODER_ENCODINGS}),
    "encoder":     CoreSpec(Utf8Encoder, ENCODE_ERRORS, choices={"encoding": ENCODER_ENCODINGS}),
    "sanitizer":   CoreSpec(Utf8Sanitizer, SANITIZE_ERRORS),
    "validator":   CoreSpec(Utf8Validator, choices={"lanes": LANES}),
    "lane_packer": CoreSpec(LanePacker, fixed={"lane": CodepointLaneLayout},
                            defaults={"lanes": 1}, axi_stream=False),
    "utf16_encoder": CoreSpec(Utf16Encoder, UTF16_ENCODE_ERRORS),
    "utf16_decoder": CoreSpec(Utf16Decoder, UTF16_DECODE_ERRORS),
    "utf16_units":   CoreSpec(Utf16Units, choices={"byteorder": BYTE_ORDERS}),
    "utf16_bytes":   CoreSpec(Utf16Bytes, choices={"byteorder": BYTE_ORDERS}),
    # The stages of the `utf-16` scheme's mark (reading it, writing it): no parameters.
    "utf16_bom_units":  CoreSpec(Utf16BomUnits),
    "utf16_bom_writer": CoreSpec(Utf16BomWriter),
    # The byte-level stages after the sanitiser and the UTF-16 encoder: the `utf-8-sig` mark
    # (EF BB BF before every message), UTF-8 into CESU-8 / MUTF-8, and UTF-16 units into bytes
    # with FE FF before every message (the `utf-16` scheme's mark and `Utf16Bytes("big")`).
    "utf8_bom_writer": CoreSpec(Utf8BomWriter),
    "cesu8_expander":  CoreSpec(Cesu8Expander, choices={"encoding": tuple(EXPANSIONS)}),
    "utf16_bom_bytes": CoreSpec(Utf16BomBytes),
    # Any encoding by name (the UTF-16 schemes' stages in a row, or the UTF-8 family's core).
    "text_decoder":  CoreSpec(TextDecoder, _policies(DECODINGS),
                              choices={"encoding": tuple(DECODINGS)}),
    "text_encoder":  CoreSpec(TextEncoder, _policies(ENCODINGS),
                              choices={"encoding": tuple(ENCODINGS)}),
    "transcoder":    CoreSpec(Transcoder, TRANSCODE_ERRORS,
                              choices={"source_encoding": tuple(DECODINGS),
                                       "target_encoding": tuple(ENCODINGS)}),
}

#: The cores ``export`` writes (those with AXI4-Stream ports): ``{name: (class, policies)}``.
CORES = {name: (spec.cls, spec.errors) for name, spec in BUILDABLE.items() if spec.axi_stream}

#: Parameters of the cores that are for composing cores in Amaranth, not for a build alone.
INTERNAL_PARAMETERS = frozenset({
    "carry_error",    # Utf8Encoder: an error kind on the input (the transcoder uses it)
    "units",          # Utf16Decoder: code units out (the UTF-16 -> UTF-16 transcoders)
    "markers",        # Utf16Bytes, Utf16BomBytes: without marker beats (the same)
})


def _spec(core, among=BUILDABLE):
    if core not in among:
        raise ValueError(f"core must be one of {', '.join(among)}, not {core!r}")
    return BUILDABLE[core]


def core_parameters(core):
    """``{parameter: default}`` of the core named ``core`` (a key of :data:`BUILDABLE`): the
    parameters of its ``check_parameters`` but :data:`INTERNAL_PARAMETERS` and those the table
    fixes."""
    spec = _spec(core)
    signature = inspect.signature(spec.cls.check_parameters)
    return {name: spec.defaults.get(name, parameter.default)
            for name, parameter in signature.parameters.items()
            if parameter.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                  inspect.Parameter.KEYWORD_ONLY)
            and name not in INTERNAL_PARAMETERS and name not in spec.fixed}


def parameter_choices(core, name):
    """The values the core named ``core`` accepts for parameter ``name``, or ``None`` if no
    constant lists them: the error policies for ``errors``, else the constant named after the
    parameter in the core's module (``LANES`` for ``lanes``) or given by the table."""
    spec = _spec(core)
    if name == "errors":
        return tuple(spec.errors)
    choices = getattr(sys.modules[spec.cls.__module__], name.upper(), spec.choices.get(name))
    return tuple(choices) if isinstance(choices, (tuple, list, frozenset)) else None


def parameter_table(cores):
    """``{parameter: {core: default}}`` over the cores named in ``cores`` (for the command
    line: one option per parameter that some core takes)."""
    found = {}
    for core in cores:
        for name, default in core_parameters(core).items():
            found.setdefault(name, {})[core] = default
    return found


def make_core(core, *, among=BUILDABLE, **params):
    """The core named ``core`` (one of ``among``) with ``params`` (the others at their
    defaults); returns ``(component, params)`` with every parameter's value. Raises
    :class:`ValueError` or :class:`TypeError` with a one-line message for an unknown core or a
    bad parameter."""
    spec = _spec(core, among)
    known = core_parameters(core)
    for name in params:
        if name not in known:
            raise ValueError(f"{core} takes no parameter {name!r}"
                             f"{' (it takes ' + ', '.join(known) + ')' if known else ''}")
    params = {**known, **params}
    if "errors" in params and params["errors"] not in spec.errors:
        raise ValueError(f"{core} errors must be one of {', '.join(spec.errors)}, "
                         f"not {params['errors']!r}")
    return spec.cls(**spec.fixed, **params), params
