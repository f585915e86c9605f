"""The surrogate-joining stage of CESU-8 and Modified UTF-8 decoding."""

from .error_kind import check_policy
from .utf16_decoder import UTF16_DECODE_ERRORS, Utf16Decoder


__all__ = ["SurrogateJoiner"]


class SurrogateJoiner(Utf16Decoder):
    """:class:`~.utf16_decoder.Utf16Decoder` after a UTF-8-family byte decoder that accepts
    surrogates (CESU-8, Modified UTF-8): a lead surrogate directly followed by a trail
    surrogate (both well-formed outputs of the byte decoder) is one supplementary code point.
    The differences from UTF-16, as in the reference's ``JoinSurrogates`` without
    ``merge_truncated``:

    * An error item of the byte decoder (U+FFFD or an escape U+DC80..U+DCFF, with its kind)
      passes through as it is and never merges with a lead surrogate before it: the lead is
      lone, an error of its own (ED A0 80 ED B0 is U+FFFD ``SURROGATE``, U+FFFD ``TRUNCATED``).
    * ``lone_is_error=False`` (Modified UTF-8, where every Java ``char`` sequence is
      well-formed): a lone surrogate passes through as itself with ``error`` ``NONE``, and
      ``errors`` changes nothing.

    The byte decoders of these encodings never output a value above U+FFFF, so the input's
    ``unit`` is the low 16 bits of their ``codepoint``. Ports, latency (:attr:`LATENCY` = 3),
    throughput and LUT depth: :class:`~.utf16_decoder.Utf16Decoder`'s.
    """

    _utf16_error_beats = False

    @classmethod
    def check_parameters(cls, errors="replace", *, lone_is_error=True):
        check_policy(errors, UTF16_DECODE_ERRORS)
        if not isinstance(lone_is_error, bool):
            raise TypeError(f"lone_is_error must be a bool, not {lone_is_error!r}")

    def __init__(self, errors="replace", *, lone_is_error=True):
        self._lone_is_error = lone_is_error
        super().__init__(errors)
